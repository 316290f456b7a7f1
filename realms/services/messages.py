"""Operator messages into a running realm's Commons (``pit_msg``, the API)."""

from __future__ import annotations

from realms.herald.posting import operator_message
from realms.models import Realm, RealmAgent

MAX_TEXT = 4000


class MessageError(ValueError):
    """The message cannot be sent; nothing was posted."""


def send_operator_message(realm_id: str, text: str, to: str | None = None) -> str:
    """Post ``[operator] <text>`` in the Commons, mentioning ``to`` or every live agent.

    Returns the Matrix event id. Mentions are what lets mention-gated agents see it.
    """
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        raise MessageError(f"realm {realm_id!r}: no such realm")
    if realm.state != Realm.State.RUNNING:
        raise MessageError(f"realm {realm_id!r} is {realm.state}, not running")
    body = text.strip()
    if not body:
        raise MessageError("the message is empty")
    if len(body) > MAX_TEXT:
        raise MessageError(f"the message is longer than {MAX_TEXT} characters")
    live = list(
        RealmAgent.objects.filter(realm=realm, state=RealmAgent.State.RUNNING)
        .order_by("position")
        .values_list("agent_id", flat=True)
    )
    if to is not None:
        if to not in live:
            raise MessageError(f"{to!r} is not a live agent of {realm_id} ({', '.join(live)})")
        return operator_message(realm_id, body, to)
    mentions = " ".join(f"@{agent}" for agent in live)
    return operator_message(realm_id, f"{mentions} {body}".strip())
