"""Reservations on the event loop itself (SQLite): held and committed there and then when
the file is free, never waited for when another writer has it, and left to the line when
refused or when the file stays busy, without ever being held twice."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from ledger.gateway.books import Books
from ledger.gateway.inline import Held, InlineReservations
from ledger.models import VirtualKey
from ledger.services import spend
from realms.forge import procs
from tests.ledger.conftest import mint

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

REALM = "r-inline"


@pytest.fixture
def key(profiles: None) -> VirtualKey:
    mint(REALM, "ping", "1")  # a cap of 1 USD: 10**9 n$
    return VirtualKey.objects.get(realm_id=REALM)


@pytest.fixture
def inline() -> Iterator[InlineReservations]:
    found = InlineReservations.for_database()
    assert found is not None, "the test database is a SQLite file"
    yield found
    found.close()


def reserved(key: VirtualKey) -> int:
    key.refresh_from_db()
    return key.reserved_nusd


class Writer:
    """Another connection holding the file's write lock, as a second writer would."""

    def __init__(self) -> None:
        name = str(connections["default"].settings_dict["NAME"])
        # Let go of from a timer's thread in some tests.
        self.db = sqlite3.connect(name, timeout=5, check_same_thread=False)
        self.db.isolation_level = None

    def __enter__(self) -> Writer:
        self.db.execute("BEGIN IMMEDIATE")
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")
        self.db.close()


def test_a_reservation_is_held_and_committed_where_it_is_asked_for(
    key: VirtualKey, inline: InlineReservations
) -> None:
    assert inline.hold(key.pk, REALM, 5_000) is Held.YES
    # Another connection sees it at once: it was committed, nothing waits on a thread.
    assert reserved(key) == 5_000
    assert key.reserved_by == procs.identity()
    assert inline.hold(key.pk, REALM, 7_000) is Held.YES
    assert reserved(key) == 12_000


def test_a_busy_file_is_answered_at_once_and_nothing_is_held(
    key: VirtualKey, inline: InlineReservations
) -> None:
    with Writer():
        started = time.monotonic()
        assert inline.hold(key.pk, REALM, 5_000) is Held.BUSY
        # SQLite's busy handler would have slept here; the loop must never wait.
        assert time.monotonic() - started < 0.05
    assert reserved(key) == 0
    assert inline.hold(key.pk, REALM, 5_000) is Held.YES
    assert reserved(key) == 5_000


def test_what_the_statement_refuses_is_left_to_the_line(
    key: VirtualKey, inline: InlineReservations
) -> None:
    assert inline.hold(key.pk, REALM, 10**9 + 1) is Held.NO  # more than the cap
    assert inline.hold(key.pk + 999, REALM, 1) is Held.NO  # no such key
    VirtualKey.objects.filter(pk=key.pk).update(revoked_at=timezone.now())
    assert inline.hold(key.pk, REALM, 1) is Held.NO
    assert reserved(key) == 0
    # The line says why.
    assert spend.reserve(key.pk, REALM, 1) is spend.Refusal.REVOKED


class Line:
    """The reservation line's runner, on a thread, counting the rounds it was handed."""

    def __init__(self) -> None:
        self.rounds = 0

    async def __call__(self, fn: Callable[[], Any]) -> Any:
        self.rounds += 1
        return await asyncio.to_thread(self._run, fn)

    @staticmethod
    def _run(fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        finally:
            connections.close_all()


async def test_a_short_lock_is_waited_out_on_the_loop_a_long_one_in_the_line(
    key: VirtualKey, inline: InlineReservations
) -> None:
    line = Line()
    books = Books(line, line, hold_now=inline.hold)
    try:
        # Another writer lets go within a few milliseconds: the call holds its reservation
        # on the loop after a pause or two, without a round of the line.
        writer = Writer()
        writer.db.execute("BEGIN IMMEDIATE")
        threading.Timer(0.002, writer.release).start()
        assert await books.reserve(key.pk, REALM, 5_000) is None
        assert line.rounds == 0

        # One that keeps the file: the call takes the line, which waits for the lock.
        writer = Writer()
        writer.db.execute("BEGIN IMMEDIATE")
        threading.Timer(0.3, writer.release).start()
        assert await books.reserve(key.pk, REALM, 7_000) is None
        assert line.rounds == 1
    finally:
        await books.aclose()
    # Held once each, whichever way it went.
    assert await asyncio.to_thread(reserved, key) == 12_000
