"""A queue per local model server: agents wait for a free slot instead of timing out.

A llama.cpp server answers as many requests at once as it has slots; past that it queues
them itself, but every queued request still holds a connection and its upstream timeout
runs while it waits. The gateway waits here instead, before the call reaches the server,
and the upstream timeout starts only once a slot is free. Keys of every other provider
pass by with one comparison.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from ledger.gateway.auth import KeyInfo

LOCAL_PROVIDER = "local"


class UpstreamQueues:
    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._by_base: dict[str, asyncio.Semaphore] = {}

    def for_key(self, key: KeyInfo) -> asyncio.Semaphore | None:
        if key.provider != LOCAL_PROVIDER:
            return None
        queue = self._by_base.get(key.api_base)
        if queue is None:
            queue = self._by_base[key.api_base] = asyncio.Semaphore(self.slots)
        return queue

    def waiting(self, api_base: str) -> int:
        """How many calls wait for a slot of this upstream (for tests and benchmarks)."""
        queue = self._by_base.get(api_base)
        waiters = getattr(queue, "_waiters", None) if queue is not None else None
        return len(waiters) if waiters else 0


async def held_while_streaming(
    queue: asyncio.Semaphore, stream: AsyncIterator[bytes]
) -> AsyncIterator[bytes]:
    """Relay a stream whose slot is already taken, giving the slot back when it ends."""
    try:
        async for chunk in stream:
            yield chunk
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
        queue.release()
