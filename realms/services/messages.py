"""Operator messages into a running realm's Commons (``pit_msg``, the API).

Delivery goes through Herald. When the bus cannot take a message (the realm was torn
down, the homeserver is unreachable) it is still chronicled as undelivered, so nothing
the operator said is silently dropped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.herald.directory import BusNotFound
from realms.herald.matrix import MatrixError
from realms.herald.posting import operator_message
from realms.models import Realm, RealmAgent

log = logging.getLogger(__name__)

MAX_TEXT = 4000


class MessageError(ValueError):
    """The message cannot be sent as asked; nothing was posted or recorded.

    ``field`` names the input at fault, for API responses.
    """

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(detail)
        self.field = field


@dataclass(frozen=True)
class OperatorDelivery:
    delivered: bool
    event_id: str | None = None
    reason: str | None = None
    retryable: bool = False


def send_operator_message(realm_id: str, text: str, to: str | None = None) -> OperatorDelivery:
    """Post ``[operator] <text>`` in the Commons, mentioning ``to`` or every live agent.

    Mentions are what lets mention-gated agents see the message.
    """
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        raise MessageError("realm", f"realm {realm_id!r}: no such realm")
    if realm.state != Realm.State.RUNNING:
        raise MessageError("realm", f"realm {realm_id!r} is {realm.state}, not running")
    body = text.strip()
    if not body:
        raise MessageError("text", "the message is empty")
    if len(body) > MAX_TEXT:
        raise MessageError("text", f"the message is longer than {MAX_TEXT} characters")
    live = list(
        RealmAgent.objects.filter(realm=realm, state=RealmAgent.State.RUNNING)
        .order_by("position")
        .values_list("agent_id", flat=True)
    )
    if to is not None and to not in live:
        raise MessageError("to", f"{to!r} is not a live agent of {realm_id} ({', '.join(live)})")
    if to is None:
        body = f"{' '.join(f'@{agent}' for agent in live)} {body}".strip()
    try:
        event_id = operator_message(realm_id, body, to)
    except BusNotFound:
        return _undelivered(
            realm_id, body, to, "the realm has no message bus (not provisioned, or torn down)"
        )
    except MatrixError as exc:
        log.warning("operator message to %s not delivered: %s", realm_id, exc.errcode)
        return _undelivered(
            realm_id, body, to, f"the homeserver refused or failed ({exc.status})", exc.retryable
        )
    return OperatorDelivery(delivered=True, event_id=event_id)


@transaction.atomic
def _undelivered(
    realm_id: str, text: str, to: str | None, reason: str, retryable: bool = False
) -> OperatorDelivery:
    record_event(
        realm_id,
        Kind.SYSTEM,
        {"event": "operator_message", "text": text, "to": to, "delivered": False, "reason": reason},
    )
    return OperatorDelivery(delivered=False, reason=reason, retryable=retryable)
