"""Writing to the Chronicle. Every event goes through :func:`record_event`."""

from __future__ import annotations

from typing import Any

from chronicle import live
from chronicle.kinds import Kind
from chronicle.models import Event, now_ms
from chronicle.values import make_storable

ESCAPED_KEY = "escaped_fields"


def record_event(
    realm_id: str, kind: Kind | str, payload: dict[str, Any], *, ts_ms: int | None = None
) -> Event:
    """Append one event and push it to open consoles once committed.

    Boundaries refuse bad values before they get here (``chronicle.values``); what
    arrives anyway (a sandbox's output, a runtime's trace) is stored escaped, with
    the escaped places listed under ``escaped_fields``, because a row that cannot be
    stored or read back can never be repaired.
    """
    stored, escaped = make_storable(payload, "payload")
    if escaped:
        stored = {**stored, ESCAPED_KEY: escaped}
    event = Event.objects.create(
        realm_id=realm_id, kind=str(kind), payload=stored, ts_ms=ts_ms or now_ms()
    )
    live.publish(
        realm_id,
        "event",
        {"id": event.pk, "kind": event.kind, "payload": stored, "ts": event.ts_ms},
    )
    return event
