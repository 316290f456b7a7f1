"""Django's SQLite backend, plus two things for the Chronicle's triggers (chronicle.guard).

* ``PRAGMA recursive_triggers = ON`` on every connection, so the row that
  ``INSERT OR REPLACE`` deletes fires the DELETE trigger and the rewrite is refused;
* ``flush`` (the test database's reset, ``manage.py flush``) lifts the Chronicle's
  DELETE triggers for the one transaction that empties the tables, and puts them back.
"""

from __future__ import annotations

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
        connection = super().get_new_connection(conn_params)
        connection.execute("PRAGMA recursive_triggers = ON")
        return connection
