"""What the floor looks like, read from the TURN events the Warden writes."""

from __future__ import annotations

from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.realmtools.context import Caller

_STATE_EVENTS = (None, "round_complete")


def _latest_turn(realm_id: str) -> dict[str, Any] | None:
    """The newest grant or round boundary (removals and retirements only annotate)."""
    for payload in (
        Event.objects.filter(realm_id=realm_id, kind=Kind.TURN)
        .order_by("-id")
        .values_list("payload", flat=True)
        .iterator()
    ):
        if payload.get("event") in _STATE_EVENTS:
            return dict(payload)
    return None


def latest_round(realm_id: str) -> int | None:
    """The round of the latest TURN event of any sort (what ``rule`` measures against)."""
    payload = (
        Event.objects.filter(realm_id=realm_id, kind=Kind.TURN)
        .order_by("-id")
        .values_list("payload", flat=True)
        .first()
    )
    if payload is None or payload.get("round") is None:
        return None
    return int(payload["round"])


def turn_status(caller: Caller) -> dict[str, Any]:
    if caller.facts.turns is None:
        return {"active": False, "detail": "this realm has no turns; everyone may post any time"}
    latest = _latest_turn(caller.realm_id)
    if latest is None:
        return {"active": False, "detail": "the first turn has not been granted yet"}
    round_no = int(latest.get("round") or 0)
    order = [str(a) for a in latest.get("order") or []]
    if latest.get("event") == "round_complete":
        return {
            "active": caller.facts.live,
            "round": round_no,
            "last_completed_round": int(latest.get("completed") or round_no - 1),
            "current": None,
            "order": order,
            "done_this_round": [],
            "upcoming_this_round": order,
        }
    position = int(latest.get("position") or 0)
    return {
        "active": caller.facts.live,
        "round": round_no,
        "last_completed_round": round_no - 1,
        "current": latest.get("current"),
        "order": order,
        "done_this_round": order[:position],
        "upcoming_this_round": order[position + 1 :],
    }
