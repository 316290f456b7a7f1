"""``manage.py pit_library``: import, list and export the scenario library."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from realms.library import files as trees
from tests.conftest import REPO

TOOLCHECK = REPO / "examples" / "toolcheck"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.django_db
def test_the_command_imports_lists_and_exports(tmp_path: Path, capsys):
    call_command("pit_library", "import", str(TOOLCHECK))
    call_command("pit_library", "list")
    call_command("pit_library", "export", "toolcheck", "-o", str(tmp_path / "tc.zip"))
    out = capsys.readouterr().out
    assert "toolcheck (user): valid" in out
    assert trees.read_zip((tmp_path / "tc.zip").read_bytes()) == _tree(TOOLCHECK)
    with pytest.raises(CommandError, match="no scenario named 'ghost'"):
        call_command("pit_library", "export", "ghost", "-o", str(tmp_path / "g"))
