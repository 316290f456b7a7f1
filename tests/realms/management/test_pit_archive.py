"""``manage.py pit_archive REALM``: the realm's archive folder."""

from __future__ import annotations

import pytest

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db, pytest.mark.usefixtures("cli_home")]


def test_archive_writes_the_folder(tmp_path):
    build()
    out = run("pit_archive", REALM, "-o", str(tmp_path / "out"))
    folder = tmp_path / "out" / REALM
    assert out.strip() == str(folder)
    assert "message 24" in (folder / "transcript.txt").read_text()
    assert (folder / "report.md").read_text().startswith("# CLI — final report")
    assert (folder / "manifest.json").exists()
