"""Private messages: recorded here, delivered by the Warden on its next tick.

Delivery is where the permission gate lives (no DM room for the pair, a spent
per-round quota or an eliminated party means no delivery). Here we refuse only
what is plainly a mistake: an empty message, oneself, or an id not in the realm.
"""

from __future__ import annotations

import re

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

MAX_MESSAGE = 4000
_NOT_ID = re.compile(r"[^a-z0-9-]")


def normalise_recipient(to: str) -> str:
    return _NOT_ID.sub("", to.strip().lower().lstrip("@").split(":", 1)[0])


def send_private(caller: Caller, to: str, message: str) -> str:
    recipient = normalise_recipient(to)
    text = message.strip()
    if not recipient:
        raise Refusal("to is empty; name the agent id to write to")
    if recipient == caller.agent_id:
        raise Refusal("you cannot send a private message to yourself")
    if recipient not in caller.facts.roster:
        partners = ", ".join(sorted(caller.facts.dm_partners(caller.agent_id))) or "nobody"
        raise Refusal(f"{recipient!r} is not in this realm; you can write to: {partners}")
    if not text:
        raise Refusal("message is empty")
    if len(text) > MAX_MESSAGE:
        raise Refusal(f"message is longer than {MAX_MESSAGE} characters")
    record_event(
        caller.realm_id, Kind.PRIVATE, {"from": caller.agent_id, "to": recipient, "text": text}
    )
    return f"Delivered privately to {recipient}."
