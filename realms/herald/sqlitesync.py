"""Commit without an fsync on the embedded homeserver's SQLite: a Synapse module.

Synapse opens SQLite in WAL mode and leaves ``synchronous`` at FULL, so every
write transaction waits for an fsync — and it has a single connection, so every
other query of the homeserver waits behind it. Sending one message commits a
handful of write transactions (the event, its stream positions, the
application-service transaction, locks); on a busy disk the fsyncs alone were a
sixth of the homeserver's time in ``bench/bus.py``.

With WAL, ``synchronous = NORMAL`` is still safe against corruption and against
the process dying (the platform's own SQLite database runs the same way): only an
operating-system crash or power loss can roll back the last commits, and
``realms.herald.delivery.resume_delivery`` reads the rooms back after a restart.

Loaded through ``modules:`` only when Synapse runs on SQLite. The setting is applied
while Synapse parses its config, before it opens any database connection. Synapse
imports this module in its own process: it must not import Django.
"""

from __future__ import annotations

from typing import Any

from synapse.storage.engines.sqlite import Sqlite3Engine

from realms.herald.patchmodule import ConfigTimePatch

PRAGMA = "PRAGMA synchronous = NORMAL;"
APPLIED = "_bearpit_synchronous_normal"


def apply() -> None:
    """Make every connection Synapse opens from now on commit without an fsync."""
    if getattr(Sqlite3Engine, APPLIED, False):
        return
    original = Sqlite3Engine.on_new_connection

    def on_new_connection(self: Sqlite3Engine, db_conn: Any) -> None:
        original(self, db_conn)
        db_conn.execute(PRAGMA)

    Sqlite3Engine.on_new_connection = on_new_connection  # type: ignore[method-assign]
    setattr(Sqlite3Engine, APPLIED, True)


class SqliteSync(ConfigTimePatch):
    """The module Synapse loads."""

    patch = staticmethod(apply)
