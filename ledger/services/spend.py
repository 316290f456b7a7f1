"""Reservations, settlement and spend read-outs.

The gateway calls :func:`reserve` before it forwards a call and :func:`settle` after.
The reservation is one conditional UPDATE: it succeeds only if the key is live, its realm
is not concluded, and spent + reserved + this reservation stays within the cap. The
database evaluates the condition under the row's write lock (SQLite's IMMEDIATE write
lock, PostgreSQL's row lock with the condition re-checked after waiting), so concurrent
calls can never together reserve past the cap.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.services import record_event
from ledger.models import Spend, VirtualKey
from ledger.pricing import to_usd
from ledger.services.keys import REVOKED_CONCLUDED
from realms.forge import procs
from realms.models import Realm

log = logging.getLogger("ledger.spend")


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


def _reserve_sql() -> str:
    key = VirtualKey._meta.db_table
    realm = Realm._meta.db_table
    terminal = ", ".join(f"'{state}'" for state in Realm.TERMINAL_STATES)
    # Hand-written because this runs on every model call: one statement, nothing to compile.
    return (
        f"UPDATE {key} SET reserved_nusd = reserved_nusd + %s,"  # noqa: S608 - no user input
        " reserved_by = %s WHERE id = %s AND revoked_at IS NULL"
        " AND (cap_nusd IS NULL OR cap_nusd >= base_nusd + spent_nusd + reserved_nusd + %s)"
        f" AND NOT EXISTS (SELECT 1 FROM {realm} WHERE realm_id = %s AND state IN ({terminal}))"
    )


_RESERVE_SQL: str | None = None


def reserve_statement(placeholder: str = "%s") -> str:
    """The one UPDATE that holds a reservation, with the driver's placeholder; it
    changes one row when held (:func:`reserve_params`)."""
    global _RESERVE_SQL
    if _RESERVE_SQL is None:
        _RESERVE_SQL = _reserve_sql()
    return _RESERVE_SQL if placeholder == "%s" else _RESERVE_SQL.replace("%s", placeholder)


def reserve_params(key_id: int, realm_id: str, amount_nusd: int) -> list[Any]:
    return [amount_nusd, procs.identity(), key_id, amount_nusd, realm_id]


def reserve(key_id: int, realm_id: str, amount_nusd: int) -> Refusal | None:
    """Hold ``amount_nusd`` against the key's cap; None when held, else why not."""
    with connection.cursor() as cursor:
        cursor.execute(reserve_statement(), reserve_params(key_id, realm_id, amount_nusd))
        if cursor.rowcount == 1:
            return None
    return _why_refused(key_id, realm_id, amount_nusd)


def reserve_many(requests: list[tuple[int, str, int]]) -> list[Refusal | Exception | None]:
    """Several reservations in one transaction (the gateway's batched rounds).

    Each reservation succeeds or fails on its own: when the batch's transaction fails (one
    request's numbers overflow a column, say), every request is tried again alone, and
    only those that fail alone get their exception as their answer.

    Rows are locked in key order, as :func:`settle_many` does, so that concurrent batches
    cannot deadlock on PostgreSQL.
    """
    order = sorted(range(len(requests)), key=lambda i: requests[i][0])
    answers: list[Refusal | Exception | None] = [None] * len(requests)
    try:
        with transaction.atomic():
            for i in order:
                answers[i] = reserve(*requests[i])
        return answers
    except Exception:
        if len(requests) == 1:
            raise
        log.warning("a round of %d reservations failed; trying each alone", len(requests))
    for i in order:
        try:
            with transaction.atomic():
                answers[i] = reserve(*requests[i])
        except Exception as exc:
            answers[i] = exc
    return answers


@transaction.atomic
def release_many(reservations: list[tuple[int, int]]) -> None:
    """Give back reservations of calls that never reached a provider."""
    for key_id, amount in reservations:
        VirtualKey.objects.filter(pk=key_id).update(reserved_nusd=F("reserved_nusd") - amount)


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


@dataclass(frozen=True)
class Settlement:
    """The end of one call: its reservation is released and its real cost added."""

    key_id: int
    reserved_nusd: int
    cost_nusd: int
    tokens_in: int
    tokens_out: int
    latency_ms: int
    outcome: str
    model: str
    streamed: bool
    script_cursor: int | None = None


def settle(**fields: Any) -> None:
    """Settle one call (see :func:`settle_many`)."""
    settle_many([Settlement(**fields)])


def settle_each(items: list[Settlement]) -> list[Settlement]:
    """:func:`settle_many`; if that fails, each call on its own. Returns those that failed.

    One settlement that cannot be written (its numbers, its row) must not leave the
    reservations of the other calls of its batch held for good.
    """
    try:
        settle_many(items)
        return []
    except Exception:
        if len(items) == 1:
            log.exception("settling a call of key %d failed", items[0].key_id)
            return items
        log.warning("a batch of %d settlements failed; settling each alone", len(items))
    failed = []
    for item in items:
        try:
            settle_many([item])
        except Exception:
            log.exception("settling a call of key %d failed", item.key_id)
            failed.append(item)
    return failed


def _settle_sql() -> tuple[str, str]:
    key = VirtualKey._meta.db_table
    spend = Spend._meta.db_table
    # Hand-written for the same reason as the reservation: the settlement line writes
    # every call, and the ORM's compiling costs more than the statements themselves.
    update = (
        f"UPDATE {key} SET reserved_nusd = reserved_nusd - %s,"  # noqa: S608 - no user input
        " spent_nusd = spent_nusd + %s, tokens_in = tokens_in + %s,"
        " tokens_out = tokens_out + %s, calls = calls + %s,"
        " script_cursor = COALESCE(%s, script_cursor)"
        " WHERE id = %s RETURNING realm_id, agent_id, base_nusd, spent_nusd, cap_nusd"
    )
    insert = (
        f"INSERT INTO {spend} (key_id, realm_id, agent_id, model, tokens_in, tokens_out,"  # noqa: S608
        " cost_nusd, latency_ms, outcome, streamed, ts_ms)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    )
    return update, insert


_SETTLE_SQL: tuple[str, str] | None = None


@transaction.atomic
def settle_many(items: list[Settlement]) -> None:
    """Settle calls in one transaction: a Spend row per call, one UPDATE and one ``spend``
    event per key.

    The gateway hands over whatever finished while the previous batch was being written,
    so under load many calls share a commit; when calls are sparse a batch is one call and
    each call has its own event. The event's ``usd``/tokens are the batch's deltas.
    """
    global _SETTLE_SQL
    if _SETTLE_SQL is None:
        _SETTLE_SQL = _settle_sql()
    update, insert = _SETTLE_SQL
    ts = now_ms()
    by_key: dict[int, list[Settlement]] = {}
    for item in sorted(items, key=lambda i: i.key_id):  # lock order: see reserve_many
        by_key.setdefault(item.key_id, []).append(item)
    rows: list[tuple[Any, ...]] = []
    with connection.cursor() as cursor:
        for key_id, group in by_key.items():
            cost = sum(i.cost_nusd for i in group)
            tokens_in = sum(i.tokens_in for i in group)
            tokens_out = sum(i.tokens_out for i in group)
            cursors = [i.script_cursor for i in group if i.script_cursor is not None]
            cursor.execute(
                update,
                [
                    sum(i.reserved_nusd for i in group),
                    cost,
                    tokens_in,
                    tokens_out,
                    len(group),
                    max(cursors) if cursors else None,
                    key_id,
                ],
            )
            found = cursor.fetchone()
            if found is None:
                # Its realm was deleted while the call ran: there is no row left to bill.
                log.warning("settling %d call(s) of key %d: the key is gone", len(group), key_id)
                continue
            realm_id, agent_id, base, spent, cap = found
            rows.extend(
                (
                    i.key_id,
                    realm_id,
                    agent_id,
                    i.model,
                    i.tokens_in,
                    i.tokens_out,
                    i.cost_nusd,
                    i.latency_ms,
                    i.outcome,
                    i.streamed,
                    ts,
                )
                for i in group
            )
            if not (cost or tokens_in or tokens_out):
                continue
            record_event(
                realm_id,
                Kind.SPEND,
                {
                    "agent": agent_id,
                    "usd": float(to_usd(cost)),
                    "cumulative": float(to_usd(base + spent)),
                    "cap": None if cap is None else float(to_usd(cap)),
                    "tokens_in": tokens_in,
                    "tokens_out": tokens_out,
                },
                ts_ms=ts,
            )
        if rows:
            cursor.executemany(insert, rows)


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
