"""The books' lines: how calls share rounds (and so commits) of the database."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest

from ledger.gateway.books import _Line

LINGER = 0.2


async def _inline(fn: Callable[[], Any]) -> Any:
    return fn()


class _Rounds:
    """The write function of a line: it keeps each round it was handed."""

    def __init__(self) -> None:
        self.rounds: list[list[int]] = []
        self.at: list[float] = []

    def __call__(self, items: list[int]) -> list[int]:
        self.rounds.append(list(items))
        self.at.append(time.monotonic())
        return [i * 10 for i in items]


async def test_items_nobody_waits_for_share_one_round_across_the_linger() -> None:
    rounds = _Rounds()
    line: _Line[int, int] = _Line(_inline, rounds, linger=LINGER)
    futures = []
    for i in range(8):
        futures.append(line.put(i, urgent=False))
        await asyncio.sleep(LINGER / 20)
    assert await asyncio.gather(*futures) == [i * 10 for i in range(8)]
    # Arriving one after another, well inside the window, they are written together.
    assert rounds.rounds == [list(range(8))]
    await line.aclose()


async def test_an_urgent_item_ends_the_linger_and_takes_the_waiting_ones_along() -> None:
    rounds = _Rounds()
    line: _Line[int, int] = _Line(_inline, rounds, linger=LINGER)
    lazy = line.put(1, urgent=False)
    await asyncio.sleep(0.01)
    started = time.monotonic()
    assert await line.put(2, urgent=True) == 20
    assert time.monotonic() - started < LINGER / 2
    assert await lazy == 10
    assert rounds.rounds == [[1, 2]]
    await line.aclose()


async def test_closing_writes_what_is_queued_without_lingering() -> None:
    rounds = _Rounds()
    line: _Line[int, int] = _Line(_inline, rounds, linger=LINGER * 10)
    queued = [line.put(i, urgent=False) for i in range(3)]
    started = time.monotonic()
    await line.aclose()
    assert time.monotonic() - started < LINGER
    assert [f.result() for f in queued] == [0, 10, 20]
    assert rounds.rounds == [[0, 1, 2]]


async def test_a_line_without_linger_writes_a_lone_item_at_once() -> None:
    rounds = _Rounds()
    line: _Line[int, int] = _Line(_inline, rounds)
    started = time.monotonic()
    assert await line.put(5) == 50
    assert time.monotonic() - started < 0.05
    await line.aclose()


async def test_an_item_whose_caller_left_before_its_round_is_handed_back() -> None:
    rounds = _Rounds()
    gate = asyncio.Event()
    orphans: list[tuple[int, int]] = []

    async def held(fn: Callable[[], Any]) -> Any:
        await gate.wait()
        return fn()

    line: _Line[int, int] = _Line(held, rounds, orphaned=lambda i, a: orphans.append((i, a)))
    waiting = asyncio.ensure_future(line.put(3))
    kept = line.put(4)
    await asyncio.sleep(0.01)
    waiting.cancel()
    gate.set()
    assert await kept == 40
    assert orphans == [(3, 30)]
    await line.aclose()


@pytest.mark.django_db(transaction=True)
async def test_a_reservation_granted_to_a_caller_that_left_is_released(profiles: None) -> None:
    from asgiref.sync import sync_to_async

    from ledger.gateway.books import Books
    from ledger.models import VirtualKey
    from tests.ledger.conftest import mint

    await sync_to_async(mint)("r-books", "a", "1")
    key = await VirtualKey.objects.aget(realm_id="r-books")
    gate = asyncio.Event()

    async def held(fn: Callable[[], Any]) -> Any:
        await gate.wait()
        return await asyncio.to_thread(fn)

    async def at_once(fn: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(fn)

    books = Books(held, at_once)
    caller = asyncio.ensure_future(books.reserve(key.pk, "r-books", 5000))
    await asyncio.sleep(0.01)
    caller.cancel()
    gate.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    await books.aclose()
    await key.arefresh_from_db()
    assert key.reserved_nusd == 0
