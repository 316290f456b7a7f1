"""The embedded homeserver runs its SQLite transactions on the reactor thread; PostgreSQL
keeps its pool of threads (which homeserver loads the module: test_sqlitesync.py)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any, cast

import pytest
from synapse.config.database import DatabaseConnectionConfig
from synapse.storage import database as synapse_database
from synapse.storage.engines import create_engine
from twisted.enterprise import adbapi
from twisted.internet.interfaces import IReactorCore
from twisted.internet.testing import MemoryReactorClock

from realms.herald import sqliteinline
from realms.herald.sqliteinline import SqliteInline

pytestmark = pytest.mark.timeout(30)


def _pool(database: dict[str, Any]) -> adbapi.ConnectionPool:
    """A pool built the way Synapse builds one for its database."""
    SqliteInline.parse_config({})
    engine = create_engine(database)
    config = DatabaseConnectionConfig("master", database)
    return synapse_database.make_pool(
        reactor=cast(IReactorCore, MemoryReactorClock()),
        db_config=config,
        engine=engine,
        server_name="t.local",
    )


def _sqlite_pool(path: Path) -> adbapi.ConnectionPool:
    args = {"database": str(path), "cp_min": 1, "cp_max": 1, "check_same_thread": False}
    return _pool({"name": "sqlite3", "args": args})


def _rows(path: Path) -> list[tuple[Any, ...]]:
    """What another connection sees: only what was committed."""
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT x FROM t ORDER BY x").fetchall()


def test_a_transaction_runs_at_once_on_the_calling_thread_and_commits(tmp_path: Path) -> None:
    path = tmp_path / "hs.db"
    pool = _sqlite_pool(path)

    def work(conn: Any) -> int:
        cursor = conn.cursor()
        cursor.execute("CREATE TABLE t (x INTEGER)")
        cursor.execute("INSERT INTO t VALUES (1), (2)")
        return threading.get_ident()

    # The reactor never runs here: a transaction handed to the pool's thread would wait.
    done = pool.runWithConnection(work)
    assert done.called
    results: list[int] = []
    done.addCallback(results.append)
    assert results == [threading.get_ident()]
    assert _rows(path) == [(1,), (2,)]
    pool.close()


def test_a_failed_transaction_is_rolled_back_and_its_error_reaches_the_caller(
    tmp_path: Path,
) -> None:
    path = tmp_path / "hs.db"
    pool = _sqlite_pool(path)
    pool.runWithConnection(lambda conn: conn.cursor().execute("CREATE TABLE t (x INTEGER)"))

    def half_done(conn: Any) -> None:
        conn.cursor().execute("INSERT INTO t VALUES (3)")
        raise ValueError("broke halfway")

    failed = pool.runWithConnection(half_done)
    assert failed.called
    errors: list[Any] = []
    failed.addErrback(errors.append)
    assert len(errors) == 1 and errors[0].check(ValueError)
    assert _rows(path) == []
    # The connection is usable again afterwards, and still the only one.
    pool.runWithConnection(lambda conn: conn.cursor().execute("INSERT INTO t VALUES (4)"))
    assert _rows(path) == [(4,)]
    assert len(pool.connections) == 1
    pool.close()


def test_a_postgres_pool_keeps_its_threads() -> None:
    pool = _pool({"name": "psycopg2", "args": {"dbname": "unused", "cp_min": 1, "cp_max": 2}})
    # Nothing is connected or run: the pool's own method, handing work to its threads.
    assert getattr(pool.runWithConnection, "__func__", None) is (
        adbapi.ConnectionPool.runWithConnection
    )
    assert not pool.connections


def test_applying_twice_wraps_once() -> None:
    SqliteInline.parse_config({})
    built = synapse_database.make_pool
    sqliteinline.apply()
    assert synapse_database.make_pool is built
