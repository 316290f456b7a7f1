"""Private notes: each turn starts from nothing, so agents write down what they need."""

from __future__ import annotations

from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

MAX_NOTE = 8000


def remember(caller: Caller, note: str) -> str:
    text = note.strip()
    if not text:
        raise Refusal("note is empty")
    if len(text) > MAX_NOTE:
        raise Refusal(f"note is longer than {MAX_NOTE} characters; split it")
    record_event(caller.realm_id, Kind.NOTE, {"agent": caller.agent_id, "text": text})
    return "Noted. recall() returns your notes, oldest first."


def recall(caller: Caller) -> dict[str, Any]:
    notes = [
        str(payload.get("text", ""))
        for payload in Event.objects.filter(realm_id=caller.realm_id, kind=Kind.NOTE)
        .order_by("id")
        .values_list("payload", flat=True)
        if payload.get("agent") == caller.agent_id
    ]
    return {"notes": notes}
