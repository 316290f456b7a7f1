"""A database that cannot be opened says which file, SQLite's extended code and how
much room is left beside it: "disk I/O error" alone hides a full disk."""

from __future__ import annotations

import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db.utils import OperationalError

from bearpit.sqlite.base import DatabaseWrapper


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB filesystem of its own, unmounted afterwards."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _wrapper(database: Path) -> DatabaseWrapper:
    return DatabaseWrapper(
        {
            "NAME": str(database),
            "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"},
            "TIME_ZONE": None,
            "CONN_MAX_AGE": 0,
            "CONN_HEALTH_CHECKS": False,
            "AUTOCOMMIT": True,
            "ATOMIC_REQUESTS": False,
        }
    )


def test_a_full_disk_under_the_database_is_named_in_the_error(
    tiny_disk: Path, django_db_blocker: Any
) -> None:
    database = tiny_disk / "bearpit.sqlite3"
    first = sqlite3.connect(database)
    first.execute("PRAGMA journal_mode=WAL")
    first.execute("CREATE TABLE t (x)")
    first.commit()
    first.close()
    fill = (tiny_disk / "fill").open("wb", buffering=0)
    with pytest.raises(OSError, match="No space left"):
        while True:
            fill.write(b"x" * 4096)
    fill.close()

    with django_db_blocker.unblock(), pytest.raises(OperationalError) as failure:
        _wrapper(database).ensure_connection()

    message = str(failure.value)
    assert "disk I/O error (SQLITE_IOERR" in message, message
    assert f"opening {database}" in message, message
    assert "0 MiB free" in message, message


def test_a_database_that_opens_is_unchanged(tmp_path: Path, django_db_blocker: Any) -> None:
    wrapper = _wrapper(tmp_path / "fine.sqlite3")
    with django_db_blocker.unblock():
        wrapper.ensure_connection()
        with wrapper.cursor() as cursor:
            cursor.execute("PRAGMA recursive_triggers")
            assert cursor.fetchone() == (1,)
        wrapper.close()
