"""The database half of the append-only rule on SQLite (PostgreSQL's is migration 0002).

Triggers refuse every UPDATE and DELETE of a Chronicle row, whatever issues it: the ORM,
an upsert (``INSERT … ON CONFLICT DO UPDATE`` fires the UPDATE trigger) or raw SQL.
``INSERT OR REPLACE`` deletes the row it replaces, which fires DELETE triggers only with
``PRAGMA recursive_triggers`` on, so the platform's SQLite backend (``bearpit.sqlite``)
turns it on for every connection, and empties the tables for ``flush`` (how a test
database is reset, as TRUNCATE is on PostgreSQL) with the DELETE triggers lifted for
that one transaction.

A migration that remakes one of these tables on SQLite drops its triggers with the old
table: such a migration must run :func:`sqlite_install` again.
"""

from __future__ import annotations

TABLES = ("chronicle_event", "chronicle_message")
OPERATIONS = ("UPDATE", "DELETE")


def _name(table: str, operation: str) -> str:
    return f"{table}_append_only_{operation.lower()}"


def sqlite_install(
    tables: tuple[str, ...] = TABLES, operations: tuple[str, ...] = OPERATIONS
) -> list[str]:
    return [
        f'CREATE TRIGGER IF NOT EXISTS "{_name(table, op)}" BEFORE {op} ON "{table}" '
        f"BEGIN SELECT RAISE(ABORT, 'the chronicle is append-only: {op} on {table} refused'); END"
        for table in tables
        for op in operations
    ]


def sqlite_remove(
    tables: tuple[str, ...] = TABLES, operations: tuple[str, ...] = OPERATIONS
) -> list[str]:
    return [f'DROP TRIGGER IF EXISTS "{_name(table, op)}"' for table in tables for op in operations]
