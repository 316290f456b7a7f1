"""Realtime fan-out: the one place that pushes to open consoles.

Pushes happen only after the surrounding transaction commits, so a console never
shows something the database later rolls back.
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)


def realm_group(realm_id: str) -> str:
    """The Channels group of a realm (group names allow only [a-zA-Z0-9_.-])."""
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in realm_id)
    return f"realm.{safe}"[:99]


def _send(group: str, message: dict[str, Any]) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a console that cannot be reached must never fail the write
        log.warning("live push to %s failed", group, exc_info=True)


def publish(realm_id: str, type_: str, data: dict[str, Any], *, using: str | None = None) -> None:
    """Push ``{"type": "realm.<type_>", "data": data}`` to the realm's group after commit."""
    message = {"type": f"realm.{type_}", "data": data}
    group = realm_group(realm_id)
    transaction.on_commit(lambda: _send(group, message), using=using)
