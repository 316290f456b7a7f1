"""``table_talk``: the referee of a machine realm reads the Commons on demand."""

from __future__ import annotations

from typing import Any

from chronicle import selectors
from chronicle.models import Message
from realms.herald.models import BusRealm
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

MAX_LIMIT = 200
MAX_BODY = 600


def commons_channel(realm_id: str) -> str:
    room = selectors.commons_room(realm_id)
    if room:
        return room
    bus = BusRealm.objects.filter(realm_id=realm_id).exclude(commons_room_id="").first()
    return bus.commons_room_id if bus else selectors.COMMONS_LABEL


def table_talk(caller: Caller, since: int | None = None, limit: int = 50) -> dict[str, Any]:
    machine = caller.facts.machine
    if machine is None:
        raise Refusal("no machine declared")
    if not machine.get("referee_reads_commons"):
        raise Refusal("this machine does not let the referee read the Commons")
    size = max(1, min(MAX_LIMIT, int(limit)))
    commons = Message.objects.filter(
        realm_id=caller.realm_id, channel=commons_channel(caller.realm_id)
    )
    if since is not None:
        rows = list(commons.filter(pk__gt=since).order_by("id")[:size])
        more_before = commons.filter(pk__lte=since).exists()
    else:
        rows = list(reversed(commons.order_by("-id")[:size]))
        more_before = bool(rows) and commons.filter(pk__lt=rows[0].pk).exists()
    return {
        "messages": [
            {"ts": m.ts_ms, "sender": m.sender_agent or m.sender, "body": m.body[:MAX_BODY]}
            for m in rows
        ],
        "cursor": rows[-1].pk if rows else since,
        "more_before": more_before,
    }
