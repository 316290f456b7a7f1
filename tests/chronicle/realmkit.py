"""Chronicle rows written by hand for tests (the realm itself is launched:
``tests.fixtures.realms.build_realm``)."""

from __future__ import annotations

import itertools
from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event, Message

_ids = itertools.count(1)
COMMONS = "!commons:bearpit.local"
DM_AB = "!dm-ab:bearpit.local"


def event(realm_id: str, kind: Kind | str, payload: dict[str, Any], ts: int) -> Event:
    return Event.objects.create(realm_id=realm_id, kind=str(kind), payload=payload, ts_ms=ts)


def running(realm_id: str, ts: int = 1_000, **extra: Any) -> Event:
    payload = {
        "event": "running",
        "commons_room": COMMONS,
        "side_channels": {DM_AB: "alice · bob"},
        **extra,
    }
    return event(realm_id, Kind.LIFECYCLE, payload, ts)


def say(
    realm_id: str,
    body: str,
    ts: int,
    *,
    agent: str = "",
    channel: str = COMMONS,
    sender: str | None = None,
) -> Message:
    """A message in a room; an empty ``agent`` means the system user posted it."""
    mxid = sender or (
        f"@bp_{realm_id}-{agent}:bearpit.local" if agent else "@bp_system:bearpit.local"
    )
    return Message.objects.create(
        realm_id=realm_id,
        channel=channel,
        sender=mxid,
        sender_agent=agent,
        body=body,
        ts_ms=ts,
        matrix_event_id=f"$ev{next(_ids)}",
    )
