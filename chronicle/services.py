"""Writing to the Chronicle. Every event goes through :func:`record_event`."""

from __future__ import annotations

from typing import Any

from chronicle import live
from chronicle.kinds import Kind
from chronicle.models import Event, now_ms


def record_event(
    realm_id: str, kind: Kind | str, payload: dict[str, Any], *, ts_ms: int | None = None
) -> Event:
    """Append one event and push it to open consoles once committed."""
    event = Event.objects.create(
        realm_id=realm_id, kind=str(kind), payload=payload, ts_ms=ts_ms or now_ms()
    )
    live.publish(
        realm_id,
        "event",
        {"id": event.pk, "kind": event.kind, "payload": payload, "ts": event.ts_ms},
    )
    return event
