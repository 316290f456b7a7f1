"""The embedded default's channel layer: in memory, and safe across event loops.

In one process the platform runs several event loops: each server (the operator's, the
homeserver's push endpoint) has its own thread and loop, and a push made from a sync
thread (a Warden tick, a mirrored bus batch) runs on yet another through
``async_to_sync``. Channels' own in-memory layer wakes a waiting consumer with a plain
``asyncio.Queue``, which is bound to the consumer's loop: a put from another loop lands
without waking it, so a message waits until that loop happens to wake for something
else. This layer remembers which loop receives on each channel and hands a send made
anywhere else over to that loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels.layers import InMemoryChannelLayer


class LoopSafeInMemoryChannelLayer(InMemoryChannelLayer):  # type: ignore[misc]
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._loops: dict[str, asyncio.AbstractEventLoop] = {}

    async def receive(self, channel: str) -> dict[str, Any]:
        self._loops[channel] = asyncio.get_running_loop()
        message: dict[str, Any] = await super().receive(channel)
        return message

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        owner = self._loops.get(channel)
        if owner is None or owner.is_closed() or owner is asyncio.get_running_loop():
            await super().send(channel, message)
            return
        # The put runs on the receiving loop, which is woken for it; the sender does not
        # wait on a loop that may be busy (a full channel drops the message, as a
        # group send does here anyway).
        owner.call_soon_threadsafe(self._send_here, channel, message)

    def _send_here(self, channel: str, message: dict[str, Any]) -> None:
        task = asyncio.get_running_loop().create_task(super().send(channel, message))
        task.add_done_callback(_quiet)

    def _remove_from_groups(self, channel: str) -> None:
        super()._remove_from_groups(channel)
        self._loops.pop(channel, None)

    async def group_discard(self, group: str, channel: str) -> None:
        await super().group_discard(group, channel)
        if not any(channel in members for members in self.groups.values()):
            self._loops.pop(channel, None)

    async def flush(self) -> None:
        await super().flush()
        self._loops = {}


def _quiet(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: a full channel is not an error worth a traceback
