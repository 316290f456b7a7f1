"""The gateway's one line to the database for reservations and settlements.

Requests queue up while the previous round is being written; each round takes everything
waiting and writes it with one hop to a worker thread: the reservations in one
transaction, then the settlements in another. Under load many calls share a round (and
a commit); a lone call gets a round of its own straight away.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ledger.services import spend

log = logging.getLogger("ledger.gateway")

T = TypeVar("T")
_ROUND_MAX = 500

Reservation = tuple[int, str, int]  # key id, realm id, amount in n$


class Books:
    def __init__(self, run: Callable[[Callable[[], Any]], Awaitable[Any]]) -> None:
        self._run = run
        self._reserves: list[tuple[Reservation, asyncio.Future[spend.Refusal | None]]] = []
        self._settles: list[tuple[spend.Settlement, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._pump())
        self._idle.clear()
        self._wake.set()

    async def reserve(self, key_id: int, realm_id: str, amount_nusd: int) -> spend.Refusal | None:
        done: asyncio.Future[spend.Refusal | None] = asyncio.get_running_loop().create_future()
        self._reserves.append(((key_id, realm_id, amount_nusd), done))
        self._start()
        return await done

    def settle(self, item: spend.Settlement) -> asyncio.Future[None]:
        """Queue a settlement; the future resolves once it is committed (or failed)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._settles.append((item, done))
        self._start()
        return done

    async def _pump(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._reserves or self._settles:
                reserves, self._reserves = self._reserves[:_ROUND_MAX], self._reserves[_ROUND_MAX:]
                settles, self._settles = self._settles[:_ROUND_MAX], self._settles[_ROUND_MAX:]
                await self._round(reserves, settles)
            self._idle.set()

    async def _round(
        self,
        reserves: list[tuple[Reservation, asyncio.Future[spend.Refusal | None]]],
        settles: list[tuple[spend.Settlement, asyncio.Future[None]]],
    ) -> None:
        def write() -> tuple[list[spend.Refusal | None] | BaseException, BaseException | None]:
            answers: list[spend.Refusal | None] | BaseException = []
            settled: BaseException | None = None
            if reserves:
                try:
                    answers = spend.reserve_many([r for r, _ in reserves])
                except Exception as exc:
                    answers = exc
            if settles:
                try:
                    spend.settle_many([s for s, _ in settles])
                except Exception as exc:
                    # The reservations stay held: a cap errs on the safe side.
                    log.exception("settling %d call(s) failed", len(settles))
                    settled = exc
            return answers, settled

        try:
            answers, _ = await self._run(write)
        except BaseException as exc:  # the pool itself failed: every waiter hears of it
            answers = exc
        for i, (_, fut) in enumerate(reserves):
            if fut.done():
                continue
            if isinstance(answers, BaseException):
                fut.set_exception(answers)
            else:
                fut.set_result(answers[i])
        for _, settled in settles:
            if not settled.done():
                settled.set_result(None)

    async def aclose(self) -> None:
        """Write what is queued, then stop."""
        if self._reserves or self._settles:
            self._start()
        await self._idle.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
