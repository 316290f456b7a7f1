"""Django's SQLite backend, plus two things for the Chronicle's triggers (chronicle.guard).

* ``PRAGMA recursive_triggers = ON`` on every connection, so the row that
  ``INSERT OR REPLACE`` deletes fires the DELETE trigger and the rewrite is refused;
* ``flush`` (the test database's reset, ``manage.py flush``) lifts the Chronicle's
  DELETE triggers for the one transaction that empties the tables, and puts them back.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from typing import Any

from django.db.backends.sqlite3 import base, operations

from chronicle.guard import TABLES, sqlite_install, sqlite_remove


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(
        self, style: Any, tables: Any, *, reset_sequences: bool = False, allow_cascade: bool = False
    ) -> list[str]:
        sql: list[str] = super().sql_flush(
            style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
        guarded = tuple(t for t in TABLES if t in set(tables or ()))
        if not sql or not guarded:
            return sql
        lift = sqlite_remove(guarded, ("DELETE",))
        return [*lift, *sql, *sqlite_install(guarded, ("DELETE",))]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_new_connection(self, conn_params: Any) -> Any:
        try:
            connection = super().get_new_connection(conn_params)
        except sqlite3.OperationalError as exc:
            raise sqlite3.OperationalError(_located(exc, str(conn_params.get("database")))) from exc
        connection.execute("PRAGMA recursive_triggers = ON")
        return connection


def _located(exc: sqlite3.OperationalError, database: str) -> str:
    """SQLite's message with the file, its extended code and the room left beside it:
    "disk I/O error" alone does not say that the disk under the database is full."""
    name = getattr(exc, "sqlite_errorname", "")
    where = os.path.dirname(database) or "."
    try:
        free = f"{shutil.disk_usage(where).free // (1 << 20)} MiB free"
        inodes = os.statvfs(where).f_favail
        room = f"{free}, {inodes} inodes free there"
    except OSError as err:
        room = f"its folder: {err.strerror}"
    return f"{exc} ({name}) opening {database}; {room}"
