"""Realtime fan-out: the one place that pushes to open consoles.

Pushes happen only after the surrounding transaction commits, so a console never
shows something the database later rolls back.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import Any

from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def realm_group(realm_id: str) -> str:
    """The Channels group of a realm (group names allow only [a-zA-Z0-9_.-])."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in realm_id)
    return f"realm.{safe}"[:99]


# A push waits this long for the layer at most: a layer that cannot be reached must not
# hold the write that made the push.
SEND_TIMEOUT_SECONDS = 10.0


class _PushLoop:
    """One event loop per process, on its own thread, that makes every push.

    ``async_to_sync`` would start a thread and an event loop for each push (and, with
    Redis, a connection): that is most of what a push costs, paid by every settled model
    call and every Warden tick. This loop lives as long as the process; a forked child
    (a Celery worker) starts its own on first use.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="live-push", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_push_loop = _PushLoop()


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        future = asyncio.run_coroutine_threadsafe(
            layer.group_send(group, message), _push_loop.get()
        )
        future.result(timeout=SEND_TIMEOUT_SECONDS)
    except Exception:  # a console that cannot be reached must never fail the write
        log.warning("live push to %s failed", group, exc_info=True)


def publish(realm_id: str, type_: str, data: dict[str, Any], *, using: str | None = None) -> None:
    """Push ``{"type": "realm.<type_>", "data": data}`` to the realm's group after commit."""
    message = {"type": f"realm.{type_}", "data": data}
    group = realm_group(realm_id)
    transaction.on_commit(lambda: _send(group, message), using=using)
