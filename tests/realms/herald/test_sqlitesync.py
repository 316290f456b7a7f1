"""The embedded homeserver's SQLite commits without an fsync; PostgreSQL is left alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml
from synapse.storage.database import LoggingDatabaseConnection
from synapse.storage.engines import Sqlite3Engine, create_engine

from bearpit.env import DatabaseURL
from realms.herald import sqlitesync
from realms.herald.config import (
    DELAYED_EVENTS_MODULE,
    EVENT_SCHEMAS_MODULE,
    FILTER_CHECK_MODULE,
    GATE_MODULE,
    SQLITE_INLINE_MODULE,
    SQLITE_SYNC_MODULE,
    HomeserverConfig,
    write_config,
)
from realms.herald.sqlitesync import SqliteSync

_FULL, _NORMAL = 2, 1


def _modules(config: HomeserverConfig) -> list[str]:
    written = yaml.safe_load(config.config_path.read_text(encoding="utf-8"))
    return [m["module"] for m in written["modules"]]


def _synapse_connection(path: Path) -> sqlite3.Connection:
    """A connection opened the way Synapse's database pool opens one."""
    engine = create_engine({"name": "sqlite3", "args": {"database": str(path)}})
    raw = sqlite3.connect(str(path), check_same_thread=False)
    engine.on_new_connection(
        LoggingDatabaseConnection(
            conn=raw, engine=engine, default_txn_name="test", server_name="t.local"
        )
    )
    return raw


def _synchronous(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA synchronous;").fetchone()[0])


@pytest.mark.timeout(30)
def test_only_a_sqlite_homeserver_loads_the_sqlite_modules(tmp_path: Path) -> None:
    base = HomeserverConfig(home=tmp_path / "a", server_name="t.local", port=1, platform_port=2)
    write_config(base)
    assert _modules(base) == [
        GATE_MODULE,
        EVENT_SCHEMAS_MODULE,
        FILTER_CHECK_MODULE,
        DELAYED_EVENTS_MODULE,
        SQLITE_SYNC_MODULE,
        SQLITE_INLINE_MODULE,
    ]

    on_postgres = HomeserverConfig(
        home=tmp_path / "b",
        server_name="t.local",
        port=1,
        platform_port=2,
        database=DatabaseURL(engine="django.db.backends.postgresql", name="bp", host="h"),
    )
    write_config(on_postgres)
    assert _modules(on_postgres) == [
        GATE_MODULE,
        EVENT_SCHEMAS_MODULE,
        FILTER_CHECK_MODULE,
        DELAYED_EVENTS_MODULE,
    ]


@pytest.mark.timeout(30)
def test_connections_opened_after_the_config_is_parsed_commit_without_fsync(
    tmp_path: Path,
) -> None:
    patched_already = bool(getattr(Sqlite3Engine, sqlitesync.APPLIED, False))
    before = _synapse_connection(tmp_path / "before.db")
    if not patched_already:  # Synapse's own default: one fsync per commit
        assert _synchronous(before) == _FULL
    assert SqliteSync.parse_config({}) == {}
    hook = Sqlite3Engine.on_new_connection
    SqliteSync.parse_config({})
    assert Sqlite3Engine.on_new_connection is hook  # applied once, never wrapped twice
    after = _synapse_connection(tmp_path / "after.db")
    assert _synchronous(after) == _NORMAL
    # Still WAL: NORMAL is only safe against corruption with a write-ahead log.
    assert after.execute("PRAGMA journal_mode;").fetchone()[0] == "wal"
    before.close()
    after.close()
