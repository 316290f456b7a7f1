"""The operator speaks into a realm's Commons.

Delivery goes through Herald. When the bus cannot take the message (the realm was never
provisioned, was torn down, or the homeserver is unreachable) the message is still
chronicled as undelivered, so nothing the operator said is silently dropped.
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
from realms.models import RealmAgent

log = logging.getLogger(__name__)

MAX_TEXT = 16_000


class OperatorMessageError(ValueError):
    """The message itself is unacceptable (empty, too long, unknown recipient)."""


@dataclass(frozen=True)
class OperatorDelivery:
    delivered: bool
    event_id: str | None = None
    reason: str | None = None
    retryable: bool = False


def send_operator_message(realm_id: str, text: str, to: str | None = None) -> OperatorDelivery:
    """Post ``[operator] <text>`` in the Commons, mentioning ``to`` when given."""
    text = text.strip()
    if not text:
        raise OperatorMessageError("text: must not be empty")
    if len(text) > MAX_TEXT:
        raise OperatorMessageError(f"text: at most {MAX_TEXT} characters; got {len(text)}")
    roster = set(
        RealmAgent.objects.filter(realm__realm_id=realm_id).values_list("agent_id", flat=True)
    )
    if to is not None and roster and to not in roster:
        raise OperatorMessageError(f"to: {to!r} is not an agent of this realm")
    try:
        event_id = operator_message(realm_id, text, to=to)
    except BusNotFound:
        return _undelivered(
            realm_id, text, to, "the realm has no message bus (not provisioned, or torn down)"
        )
    except MatrixError as exc:
        log.warning("operator message to %s not delivered: %s", realm_id, exc.errcode)
        return _undelivered(
            realm_id, text, to, f"the homeserver refused or failed ({exc.status})", exc.retryable
        )
    return OperatorDelivery(delivered=True, event_id=event_id)


@transaction.atomic
def _undelivered(
    realm_id: str, text: str, to: str | None, reason: str, retryable: bool = False
) -> OperatorDelivery:
    record_event(
        realm_id,
        Kind.SYSTEM,
        {
            "event": "operator_message",
            "text": text,
            "to": to,
            "delivered": False,
            "reason": reason,
        },
    )
    return OperatorDelivery(delivered=False, reason=reason, retryable=retryable)
