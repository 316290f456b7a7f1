"""Run the embedded homeserver's SQLite transactions on its reactor thread: a Synapse module.

Synapse gives SQLite a connection pool of one connection on one worker thread, so every
database transaction is handed to that thread and its result handed back: a queue put,
a wake-up of the worker, a ``callFromThread`` and a write to the reactor's wake-up pipe,
and the two threads then take turns at the interpreter lock. Sending one message runs a
few dozen transactions, and SQLite's own work in each is small (WAL, no fsync, see
``realms.herald.sqlitesync``): flat out (``bench/bus.py``) the homeserver's two threads
together used one core, a good part of it in the hand-over.

Here the pool runs each transaction where it is asked for, on the reactor thread, as
Synapse's own test suite runs it. The transactions are the same, in the same order,
committed or rolled back the same way, on the pool's one connection; they were already
serialised (one connection), so only the thread they run on changes. What changes for
the rest of the homeserver: while a transaction runs, the reactor serves nothing else,
where before it could parse a request meanwhile. A transaction here takes well under a
millisecond, a few at most, so that costs less than the hand-over did.

One part of Synapse relied on a transaction taking a turn of the reactor: the task
scheduler records a task as running only after starting it, and removes it when it ends.
A task whose every step is a transaction now ends before it is recorded, so its removal
failed and its record stayed, and once five such records (the scheduler's limit) had
piled up it launched no task again; the homeserver schedules one for every display name
an agent is given. A task here therefore starts on the reactor's next turn, after it is
recorded, as it did when its first transaction went to the thread.

Loaded through ``modules:`` only when Synapse runs on SQLite; PostgreSQL keeps its pool
of connections on threads, where transactions do overlap. Applied while Synapse parses
its config, before it makes any database pool. Synapse imports this module in its own
process: it must not import Django.
"""

from __future__ import annotations

from typing import Any

from synapse.storage import database as synapse_database
from synapse.storage.engines import Sqlite3Engine
from synapse.util.duration import Duration
from synapse.util.task_scheduler import TaskScheduler
from twisted.internet import defer

from realms.herald.patchmodule import ConfigTimePatch

APPLIED = "_bearpit_sqlite_inline"


def run_inline(pool: Any) -> None:
    """Make ``pool.runWithConnection`` run its function now, on the calling thread."""

    def run_with_connection(func: Any, *args: Any, **kwargs: Any) -> defer.Deferred[Any]:
        try:
            result = pool._runWithConnection(func, *args, **kwargs)
        except Exception:
            return defer.fail()
        return defer.succeed(result)

    pool.runWithConnection = run_with_connection


def start_tasks_a_turn_later() -> None:
    """Make every task action registered from now on wait one turn of the reactor first."""
    register = TaskScheduler.register_action

    def register_action(self: TaskScheduler, function: Any, action_name: str) -> None:
        async def after_a_turn(task: Any) -> Any:
            await self._clock.sleep(Duration(seconds=0))
            return await function(task)

        register(self, after_a_turn, action_name)

    TaskScheduler.register_action = register_action  # type: ignore[method-assign]


def apply() -> None:
    """Make every SQLite pool Synapse builds from now on run inline."""
    if getattr(synapse_database, APPLIED, False):
        return
    start_tasks_a_turn_later()
    original = synapse_database.make_pool

    def make_pool(*, engine: Any, **kwargs: Any) -> Any:
        pool = original(engine=engine, **kwargs)
        if isinstance(engine, Sqlite3Engine):
            run_inline(pool)
        return pool

    synapse_database.make_pool = make_pool
    setattr(synapse_database, APPLIED, True)


class SqliteInline(ConfigTimePatch):
    """The module Synapse loads."""

    patch = staticmethod(apply)
