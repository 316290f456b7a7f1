"""Reservations, settlement and spend read-outs.

The gateway calls :func:`reserve` before it forwards a call and :func:`settle` after.
The reservation is one conditional UPDATE: it succeeds only if the key is live, its realm
is not concluded, and spent + reserved + this reservation stays within the cap. The
database evaluates the condition under the row's write lock (SQLite's IMMEDIATE write
lock, PostgreSQL's row lock with the condition re-checked after waiting), so concurrent
calls can never together reserve past the cap.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.services import record_event
from ledger.models import Spend, VirtualKey
from ledger.pricing import to_usd
from ledger.services.keys import REVOKED_CONCLUDED
from realms.models import Realm


class Refusal(Enum):
    UNKNOWN_KEY = "unknown_key"
    REVOKED = "revoked"
    CONCLUDED = "concluded"
    EXHAUSTED = "exhausted"
    BUSY = "busy"  # the cap is taken by calls in flight; may fit once they settle


@dataclass(frozen=True)
class AgentSpend:
    usd: Decimal
    tokens_in: int
    tokens_out: int
    cap_usd: Decimal | None
    exhausted: bool


def reserve(key_id: int, realm_id: str, amount_nusd: int) -> Refusal | None:
    """Hold ``amount_nusd`` against the key's cap; None when held, else why not."""
    live = VirtualKey.objects.filter(pk=key_id, revoked_at__isnull=True).exclude(
        realm_id__in=Realm.objects.filter(
            realm_id=realm_id, state__in=Realm.TERMINAL_STATES
        ).values("realm_id")
    )
    fits = Q(cap_nusd__isnull=True) | Q(
        cap_nusd__gte=F("base_nusd") + F("spent_nusd") + F("reserved_nusd") + amount_nusd
    )
    if live.filter(fits).update(reserved_nusd=F("reserved_nusd") + amount_nusd):
        return None
    return _why_refused(key_id, realm_id, amount_nusd)


def _why_refused(key_id: int, realm_id: str, amount_nusd: int) -> Refusal:
    key = VirtualKey.objects.filter(pk=key_id).first()
    if key is None:
        return Refusal.UNKNOWN_KEY
    if key.revoked_at is not None:
        return Refusal.CONCLUDED if key.revoked_reason == REVOKED_CONCLUDED else Refusal.REVOKED
    if Realm.objects.filter(realm_id=realm_id, state__in=Realm.TERMINAL_STATES).exists():
        return Refusal.CONCLUDED
    if key.cap_nusd is not None and key.base_nusd + key.spent_nusd + amount_nusd > key.cap_nusd:
        VirtualKey.objects.filter(pk=key_id, refused_at__isnull=True).update(
            refused_at=timezone.now()
        )
        return Refusal.EXHAUSTED
    return Refusal.BUSY


def release(key_id: int, amount_nusd: int) -> None:
    """Give back a reservation for a call that never reached a provider."""
    VirtualKey.objects.filter(pk=key_id).update(reserved_nusd=F("reserved_nusd") - amount_nusd)


@transaction.atomic
def settle(
    *,
    key_id: int,
    reserved_nusd: int,
    cost_nusd: int,
    tokens_in: int,
    tokens_out: int,
    latency_ms: int,
    outcome: str,
    model: str,
    streamed: bool,
    script_cursor: int | None = None,
) -> Spend:
    """Turn a reservation into the call's real cost: one Spend row and one spend event."""
    changes: dict[str, object] = {
        "reserved_nusd": F("reserved_nusd") - reserved_nusd,
        "spent_nusd": F("spent_nusd") + cost_nusd,
        "tokens_in": F("tokens_in") + tokens_in,
        "tokens_out": F("tokens_out") + tokens_out,
        "calls": F("calls") + 1,
    }
    if script_cursor is not None:
        changes["script_cursor"] = script_cursor
    VirtualKey.objects.filter(pk=key_id).update(**changes)
    key = VirtualKey.objects.only(
        "realm_id", "agent_id", "base_nusd", "spent_nusd", "cap_nusd"
    ).get(pk=key_id)
    spend = Spend.objects.create(
        key_id=key_id,
        realm_id=key.realm_id,
        agent_id=key.agent_id,
        model=model,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_nusd=cost_nusd,
        latency_ms=latency_ms,
        outcome=outcome,
        streamed=streamed,
        ts_ms=now_ms(),
    )
    if cost_nusd or tokens_in or tokens_out:
        record_event(
            key.realm_id,
            Kind.SPEND,
            {
                "agent": key.agent_id,
                "usd": float(to_usd(cost_nusd)),
                "cumulative": float(to_usd(key.base_nusd + key.spent_nusd)),
                "cap": None if key.cap_nusd is None else float(to_usd(key.cap_nusd)),
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
            },
        )
    return spend


def realm_spend(realm_id: str) -> dict[str, AgentSpend]:
    """Spend per agent of a realm, across every key the agent held."""
    out: dict[str, AgentSpend] = {}
    for key in VirtualKey.objects.filter(realm_id=realm_id).order_by("agent_id", "id"):
        prev = out.get(key.agent_id)
        usd = (prev.usd if prev else Decimal(0)) + to_usd(key.spent_nusd)
        cap = None if key.cap_nusd is None else to_usd(key.cap_nusd)
        exhausted = cap is not None and (usd >= cap or key.refused_at is not None)
        out[key.agent_id] = AgentSpend(
            usd=usd,
            tokens_in=(prev.tokens_in if prev else 0) + key.tokens_in,
            tokens_out=(prev.tokens_out if prev else 0) + key.tokens_out,
            cap_usd=cap,
            exhausted=exhausted,
        )
    return out
