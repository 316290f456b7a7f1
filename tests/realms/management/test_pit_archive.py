"""``manage.py pit_archive REALM``: the realm's archive folder."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def test_an_unknown_realm_is_a_clear_error():
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run("pit_archive", "ghost-000000")


def test_archive_writes_the_folder(tmp_path):
    build()
    out = run("pit_archive", REALM, "-o", str(tmp_path / "out"))
    folder = tmp_path / "out" / REALM
    assert out.strip() == str(folder)
    assert "message 24" in (folder / "transcript.txt").read_text()
    assert (folder / "report.md").read_text().startswith("# CLI — final report")
    assert (folder / "manifest.json").exists()
