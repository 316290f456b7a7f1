"""Reservations written on the event loop itself, when the books are a SQLite file.

A reservation is one UPDATE of a few microseconds. Handing it to a database thread and
back costs far more than that, and under load the hand-offs queue behind the event loop
for the interpreter lock. So on SQLite the gateway first runs the statement right where
the call is, on a connection of its own that never waits: if another writer holds the
file, SQLite answers "busy" at once rather than stalling every call on the loop.

While another writer has the file the call tries again a few times within a few
milliseconds (the gateway's own settlements hold it about that long); anything the
statement does not hold by then (the file stays busy, the cap or the key refuses it,
anything fails) goes to the reservation line as before, which waits for the lock and
says why a reservation is refused. Nothing is weaker for it: the statement is
the line's own, committed on its own before the call goes on, so a reservation is held
in the database (and released after a crash by ``release_orphans``) exactly as before.
"""

from __future__ import annotations

import logging
import sqlite3
from enum import Enum
from pathlib import Path

from django.db import connections

from ledger.services.spend import reserve_params, reserve_statement

log = logging.getLogger("ledger.gateway")

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class Held(Enum):
    YES = "yes"
    BUSY = "busy"  # another writer has the file: try again in a moment, or take the line
    NO = "no"  # refused, or the statement failed: the line says why


class InlineReservations:
    """Used from one thread (the event loop's): sqlite3 connections are not shared."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._sql = reserve_statement("?")

    @classmethod
    def for_database(cls, alias: str = "default") -> InlineReservations | None:
        """For a SQLite database in a file, None for any other."""
        connection = connections[alias]
        if connection.vendor != "sqlite":
            return None
        name = str(connection.settings_dict["NAME"])
        if name.startswith("file:") or name == ":memory:" or not Path(name).is_file():
            return None
        return cls(name)

    def _connect(self) -> sqlite3.Connection | None:
        db = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        # Only in WAL mode does a writer leave the readers be; checkpoints are left to the
        # database threads' connections, so none ever runs on the loop.
        mode = db.execute("PRAGMA journal_mode").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            db.close()
            return None
        db.execute("PRAGMA synchronous = NORMAL")
        db.execute("PRAGMA wal_autocheckpoint = 0")
        return db

    def hold(self, key_id: int, realm_id: str, amount_nusd: int) -> Held:
        """Run the reservation's statement now; YES when it is held and committed."""
        try:
            if self._db is None:
                self._db = self._connect()
                if self._db is None:
                    return Held.NO
            cursor = self._db.execute(self._sql, reserve_params(key_id, realm_id, amount_nusd))
            return Held.YES if cursor.rowcount == 1 else Held.NO
        except sqlite3.Error as exc:
            if (
                isinstance(exc, sqlite3.OperationalError)
                and getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY
            ):
                return Held.BUSY
            log.debug("an inline reservation failed; taking the line", exc_info=True)
            self.close()
            return Held.NO

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()
