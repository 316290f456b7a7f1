"""The test database's file is opened by SQLite alone (tests/fixtures/sqlitefile.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from tests.fixtures.sqlitefile import DatabaseFileOpened, read_from_another_process

pytestmark = pytest.mark.django_db

# Another process writes a row and closes its only connection.
CHILD_WRITES = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("INSERT INTO t VALUES (1)")
db.close()
"""


def _wal_database(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t(x)")
    for _ in range(20):
        db.execute("INSERT INTO t VALUES (randomblob(4000))")
    return db


def _after_a_child_writes(path: Path, held: sqlite3.Connection) -> int:
    """Rows a new connection counts after a child wrote one and this process five."""
    subprocess.run([sys.executable, "-c", CHILD_WRITES, str(path)], check=True, timeout=60)
    for _ in range(5):
        held.execute("INSERT INTO t VALUES (randomblob(4000))")
    fresh = sqlite3.connect(path, isolation_level=None)
    try:
        return int(fresh.execute("SELECT count(*) FROM t").fetchone()[0])
    finally:
        fresh.close()


def test_reading_a_live_wal_database_in_process_breaks_the_next_connection(tmp_path):
    """Why the guard exists: SQLite's own behaviour, on a database of the test's own."""
    path = tmp_path / "other.sqlite3"
    held = _wal_database(path)
    path.read_bytes()  # closing this descriptor drops the process's locks on the file
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _after_a_child_writes(path, held)
    held.close()


def test_reading_it_from_another_process_keeps_the_locks(tmp_path):
    path = tmp_path / "other.sqlite3"
    held = _wal_database(path)
    raw = read_from_another_process(path)
    assert raw.startswith(b"SQLite format 3\x00")
    assert _after_a_child_writes(path, held) == 26
    held.close()


def test_the_test_database_file_cannot_be_opened_in_process():
    name = str(connection.settings_dict["NAME"])
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    for path in (name, f"{name}-wal", f"{name}-shm"):
        with pytest.raises(DatabaseFileOpened, match="read_from_another_process"):
            Path(path).read_bytes()
    with pytest.raises(DatabaseFileOpened):
        open(name.encode(), "rb")  # noqa: SIM115 - refused before a file object exists
    assert read_from_another_process(name).startswith(b"SQLite format 3\x00")
