"""The gateway's lines to the database: one for reservations, one for settlements.

Each line is a queue with a pump: a round takes everything that waited while the previous
round was written and writes it with one hop to a worker thread, in one transaction.
Under load many calls share a round (and a commit); a lone call gets its own round at
once. The two lines run side by side, so a call's reservation never waits behind the
bookkeeping of calls that have already finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from ledger.gateway.inline import Held
from ledger.services import spend

log = logging.getLogger("ledger.gateway")

Item = TypeVar("Item")
Answer = TypeVar("Answer")
Runner = Callable[[Callable[[], Any]], Awaitable[Any]]
Reservation = tuple[int, str, int]  # key id, realm id, amount in n$

_ROUND_MAX = 500
# How long a reservation waits, between tries on the loop, for another writer to let go
# of the SQLite file before it takes the line (whose busy handler sleeps far longer).
INLINE_RETRY_PAUSES = (0.0005, 0.001, 0.002, 0.004)
# A settlement nobody waits on may wait this long for company, so that a busy gateway
# writes settlements in fewer, larger transactions.
LINGER_SECONDS = 0.02


class _Line(Generic[Item, Answer]):
    def __init__(
        self,
        run: Runner,
        write: Callable[[list[Item]], list[Answer]],
        *,
        linger: float = 0.0,
        orphaned: Callable[[Item, Answer], None] | None = None,
        before_round: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._run = run
        self._before_round = before_round
        self._write = write
        # Told of each item whose caller stopped waiting before its answer was written.
        self._orphaned = orphaned
        self._linger = linger
        self._queue: list[tuple[Item, asyncio.Future[Answer], bool]] = []
        self._wake = asyncio.Event()
        # Set when a round must not linger: an urgent item arrived, or the line is closing.
        self._hurry = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    def put(self, item: Item, *, urgent: bool = True) -> asyncio.Future[Answer]:
        done: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._queue.append((item, done, urgent))
        if urgent:
            self._hurry.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._pump())
        self._idle.clear()
        self._wake.set()
        return done

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                if self._linger and not (self._hurry.is_set() or self._closing):
                    # The whole window, not just until the next item: that is what makes
                    # the rounds of a busy gateway large.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._hurry.wait(), self._linger)
                    self._wake.clear()
                self._hurry.clear()
                batch, self._queue = self._queue[:_ROUND_MAX], self._queue[_ROUND_MAX:]
                await self._round(batch)
            self._idle.set()

    async def _round(self, batch: list[tuple[Item, asyncio.Future[Answer], bool]]) -> None:
        items = [item for item, _, _ in batch]
        try:
            if self._before_round is not None:
                await self._before_round()
            answers: list[Answer] | BaseException = await self._run(lambda: self._write(items))
        except Exception as exc:
            answers = exc
        for i, (item, fut, _) in enumerate(batch):
            if fut.done():
                if fut.cancelled() and self._orphaned and not isinstance(answers, BaseException):
                    self._orphaned(item, answers[i])
                continue
            if isinstance(answers, BaseException):
                fut.set_exception(answers)
            else:
                fut.set_result(answers[i])

    async def aclose(self) -> None:
        self._closing = True
        self._hurry.set()
        self._wake.set()
        await self._idle.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _write_settlements(items: list[spend.Settlement | tuple[int, int]]) -> list[None]:
    releases = [i for i in items if isinstance(i, tuple)]
    settlements = [i for i in items if isinstance(i, spend.Settlement)]
    # What cannot be written leaves its reservation held: a cap errs on the safe side.
    # But only its own: each settlement is tried alone when its batch fails.
    try:
        if releases:
            spend.release_many(releases)
    except Exception:
        log.exception("releasing %d reservation(s) failed", len(releases))
    if settlements:
        spend.settle_each(settlements)
    return [None] * len(items)


class Books:
    """``before_settling`` is awaited before each round of settlements is written."""

    def __init__(
        self,
        run_reserves: Runner,
        run_settles: Runner,
        *,
        before_settling: Callable[[], Awaitable[None]] | None = None,
        hold_now: Callable[[int, str, int], Held] | None = None,
    ) -> None:
        # Tried before the line (ledger.gateway.inline).
        self._hold_now = hold_now
        self._reserves: _Line[Reservation, spend.Refusal | Exception | None] = _Line(
            run_reserves, spend.reserve_many, orphaned=self._release_orphan
        )
        self._settles: _Line[spend.Settlement | tuple[int, int], None] = _Line(
            run_settles, _write_settlements, linger=LINGER_SECONDS, before_round=before_settling
        )

    async def reserve(self, key_id: int, realm_id: str, amount_nusd: int) -> spend.Refusal | None:
        """None when held, else the refusal; raises what failed this reservation alone."""
        if self._hold_now is not None and await self._held_now(key_id, realm_id, amount_nusd):
            return None
        done = self._reserves.put((key_id, realm_id, amount_nusd))
        try:
            answer = await done
        except asyncio.CancelledError:
            # The caller is gone; a reservation it was granted must not stay held. Cancelled
            # before its round was written, the line hands it to _release_orphan; cancelled
            # once answered, it is released here.
            if done.done() and not done.cancelled():
                self._release_if_granted(done, key_id, amount_nusd)
            raise
        if isinstance(answer, Exception):
            raise answer
        return answer

    async def _held_now(self, key_id: int, realm_id: str, amount_nusd: int) -> bool:
        assert self._hold_now is not None
        for pause in (*INLINE_RETRY_PAUSES, None):
            held = self._hold_now(key_id, realm_id, amount_nusd)
            if held is not Held.BUSY or pause is None:
                return held is Held.YES
            # Nothing is held yet, so a caller cancelled here leaves nothing behind.
            await asyncio.sleep(pause)
        return False

    def _release_orphan(self, item: Reservation, answer: spend.Refusal | Exception | None) -> None:
        if answer is None:
            key_id, _, amount = item
            self._settles.put((key_id, amount), urgent=False)

    def _release_if_granted(
        self, done: asyncio.Future[spend.Refusal | Exception | None], key_id: int, amount: int
    ) -> None:
        if done.exception() is None and done.result() is None:
            self._settles.put((key_id, amount), urgent=False)

    def settle(self, item: spend.Settlement, *, urgent: bool) -> asyncio.Future[None]:
        """Queue a settlement; the future resolves once it is committed (or failed).

        An urgent one (someone awaits it) gets a round now; others may linger briefly.
        """
        return self._settles.put(item, urgent=urgent)

    async def aclose(self) -> None:
        """Write what is queued, then stop."""
        await self._reserves.aclose()
        await self._settles.aclose()
