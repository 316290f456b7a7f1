"""``pit version`` and ``manage.py pit_version`` print the same line."""

from __future__ import annotations

import pytest

from bearpit import __version__
from tests.realms.management.ranrealm import Home

pytestmark = [pytest.mark.timeout(120)]


def test_both_ways_print_the_version(fresh_home: Home) -> None:
    expected = [f"bearpit {__version__}"]
    for done in (
        fresh_home.pit("version"),
        fresh_home.pit("--version"),
        fresh_home.manage("pit_version"),
    ):
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == expected
    extra = fresh_home.manage("pit_version", "now")
    assert extra.returncode == 2 and "unrecognized arguments: now" in extra.stderr
    assert "Traceback" not in extra.stderr
