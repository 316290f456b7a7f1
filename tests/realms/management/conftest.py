from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.realms.management.ranrealm import Home, RanRealm, migrated_home, run_toolcheck


@pytest.fixture(scope="session")
def toolcheck_realm(tmp_path_factory: pytest.TempPathFactory) -> RanRealm:
    """``examples/toolcheck`` run once to its verdict, shared by the read-only commands."""
    return run_toolcheck(tmp_path_factory.mktemp("ran") / "home")


@pytest.fixture(scope="module")
def fresh_home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A migrated home with nothing in it."""
    return migrated_home(tmp_path_factory.mktemp("fresh") / "home")


@pytest.fixture
def cli_home(settings: Any, tmp_path: Path) -> Path:
    """BEARPIT_HOME in the test's own folder, for commands that read or write under it."""
    home = tmp_path / "home"
    settings.BEARPIT_HOME = home
    return home
