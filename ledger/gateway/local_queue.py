"""A queue per local model server: agents wait for a free slot instead of timing out.

A llama.cpp server answers as many requests at once as it has slots; past that it queues
them itself, but every queued request still holds a connection and its upstream timeout
runs while it waits. The gateway waits here instead, before the call reaches the server,
and the upstream timeout starts only once a slot is free. Keys of every other provider
pass by with one comparison.

A queue is as wide as its server: llama.cpp says how many slots it has (``GET /props``,
``total_slots``), which is what the platform started it with or what an operator gave a
server of their own. A server that does not say (Ollama, vLLM) gets ``fallback`` slots.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import aiohttp

from ledger.gateway.auth import KeyInfo

LOCAL_PROVIDER = "local"
PROBE_TIMEOUT_S = 3.0


class UpstreamQueues:
    def __init__(self, fallback: int, session: aiohttp.ClientSession | None = None) -> None:
        self.fallback = fallback
        self._session = session
        self._by_base: dict[str, asyncio.Semaphore] = {}
        self._probing: dict[str, asyncio.Lock] = {}

    async def for_key(self, key: KeyInfo) -> asyncio.Semaphore | None:
        if key.provider != LOCAL_PROVIDER:
            return None
        queue = self._by_base.get(key.api_base)
        if queue is not None:
            return queue
        lock = self._probing.setdefault(key.api_base, asyncio.Lock())
        async with lock:
            queue = self._by_base.get(key.api_base)
            if queue is None:
                slots = await self._slots_of(key.api_base)
                if slots is None:
                    # Nobody answered: the call itself will say so, and the next one asks again.
                    return None
                queue = self._by_base[key.api_base] = asyncio.Semaphore(slots)
        return queue

    async def _slots_of(self, api_base: str) -> int | None:
        """The server's own slot count, ``fallback`` if it answers without one, None if
        it does not answer at all."""
        if self._session is None:
            return self.fallback
        root = api_base.rstrip("/").removesuffix("/v1")
        try:
            async with self._session.get(
                f"{root}/props", timeout=aiohttp.ClientTimeout(total=PROBE_TIMEOUT_S)
            ) as resp:
                if resp.status != 200:
                    return self.fallback
                body = await resp.read()
        except (aiohttp.ClientError, TimeoutError, OSError):
            return None
        try:
            slots = json.loads(body).get("total_slots")
        except (ValueError, AttributeError):
            return self.fallback
        if isinstance(slots, int) and not isinstance(slots, bool) and 1 <= slots <= 1024:
            return slots
        return self.fallback

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
