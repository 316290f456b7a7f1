"""A realm's status as the API and the CLI show it, read from its row and its Chronicle.

State is the latest realm-level lifecycle event, with two rewrites: a run that failed
shows ``failed``, and a non-terminal state with nothing driving it any more (no Realm
row left running, or a worker claim that lapsed long ago) shows ``interrupted``.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from django.conf import settings
from django.utils import timezone

from chronicle import selectors
from chronicle.kinds import TERMINAL_LIFECYCLE, Kind, Lifecycle
from chronicle.models import Event
from realms.models import Realm

# A worker renews its claim every tick; one that lapsed this long ago is gone.
CLAIM_STALE_AFTER = dt.timedelta(seconds=60)
_SECRET_KEYS = frozenset(
    {
        "access_token",
        "api_key",
        "authorization",
        "master_key",
        "password",
        "realmtools_token",
        "token",
        "virtual_key",
    }
)
REDACTED = "[redacted]"


def redact(value: Any) -> Any:
    """A copy with secret-named fields masked: responses never carry credentials."""
    if isinstance(value, dict):
        return {
            k: REDACTED if str(k).lower() in _SECRET_KEYS and v else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def is_active(realm: Realm | None, *, now: dt.datetime | None = None) -> bool:
    """Whether something is still driving the realm (launching, provisioning or ticking)."""
    if realm is None or realm.state in Realm.TERMINAL_STATES:
        return False
    if realm.claimed_until is None:
        return True
    return realm.claimed_until >= (now or timezone.now()) - CLAIM_STALE_AFTER


def realm_state(realm_id: str, realm: Realm | None) -> str:
    return shown_state(selectors.lifecycle_state(realm_id), realm)


def _error(realm_id: str, realm: Realm | None) -> str | None:
    for value in (Lifecycle.FAILED, Lifecycle.INTERRUPTED):
        found = selectors.lifecycle_events(realm_id, value)
        if found:
            payload = found[-1].payload
            return str(payload.get("error") or payload.get("detail") or value.value)
    if realm is not None and realm.state == Realm.State.FAILED:
        return realm.conclusion_detail or "failed"
    return None


def _same_scores(a: dict[str, float], b: dict[str, Any]) -> bool:
    keys = set(a) | set(b)
    try:
        return all(math.isclose(a.get(k, 0.0), float(b.get(k, 0.0)), abs_tol=1e-6) for k in keys)
    except (TypeError, ValueError):
        return False


def realm_status(realm_id: str) -> dict[str, Any]:
    """The status document of ``GET /api/realms/{id}`` (the realm must exist)."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    verdict = selectors.verdict(realm_id)
    ledger_scores = selectors.scoreboard(realm_id)
    scores: dict[str, Any] = ledger_scores
    discrepancy = False
    if verdict is not None and isinstance(verdict.get("scoreboard"), dict):
        # The verdict's scoreboard is what the referee ruled on; a mismatch is shown.
        scores = verdict["scoreboard"]
        discrepancy = not _same_scores(ledger_scores, scores)
    spend = selectors.spend_by_agent(realm_id)
    config = selectors.run_config(realm_id) or (realm.run_config if realm is not None else {})
    return {
        "realm_id": realm_id,
        "state": realm_state(realm_id, realm),
        "outcome": None if verdict is None else verdict.get("outcome"),
        "conclusion": selectors.conclusion(realm_id),
        "config": redact(config),
        "spend": {agent: round(total.usd, 6) for agent, total in spend.items()},
        "total_spend": round(sum(total.usd for total in spend.values()), 6),
        "tokens": {
            agent: {"in": total.tokens_in, "out": total.tokens_out}
            for agent, total in spend.items()
        },
        "total_tokens": sum(total.tokens_in + total.tokens_out for total in spend.values()),
        "scores": scores,
        "score_ledger": ledger_scores,
        "score_discrepancy": discrepancy,
        "violations": redact(selectors.violations(realm_id)),
        "messages": selectors.message_count(realm_id),
        "events": selectors.event_count(realm_id),
        "active": is_active(realm),
        "error": _error(realm_id, realm),
    }


def _chronicled_states(realm_ids: list[str] | None) -> dict[str, str]:
    """Each realm's latest realm-level lifecycle state, in one query for them all."""
    qs = Event.objects.filter(
        kind=Kind.LIFECYCLE, payload__event__in=[str(s) for s in selectors.REALM_STATES]
    )
    if realm_ids is not None:
        qs = qs.filter(realm_id__in=realm_ids)
    latest: dict[str, tuple[int, int, str]] = {}
    for realm_id, ts, pk, value in qs.values_list("realm_id", "ts_ms", "id", "payload__event"):
        if realm_id not in latest or (ts, pk) > latest[realm_id][:2]:
            latest[realm_id] = (ts, pk, str(value))
    return {realm_id: found[2] for realm_id, found in latest.items()}


def shown_state(chronicled: str | None, realm: Realm | None) -> str:
    """:func:`realm_state` from an already-read chronicled state."""
    if realm is not None and realm.state == Realm.State.FAILED:
        return Lifecycle.FAILED.value
    if chronicled is None:
        return realm.state if realm is not None else "unknown"
    if chronicled not in TERMINAL_LIFECYCLE and not is_active(realm):
        return Lifecycle.INTERRUPTED.value
    return chronicled


def _rows() -> Any:
    # The snapshots are large and nothing here reads them.
    return Realm.objects.defer("project", "run_config", "parameters")


def _host_of(row: Realm | None) -> str | None:
    return row.host_id if row is not None else None


def realm_list() -> dict[str, Any]:
    """``{realms:[{realm_id, state, active, host}], active, capacity}``, most recent first.

    A fixed number of queries however many realms and events there are."""
    rows = {r.realm_id: r for r in _rows()}
    ids = selectors.chronicled_realm_ids()
    chronicled = set(ids)
    ids += [realm_id for realm_id in rows if realm_id not in chronicled]
    states = _chronicled_states(None)
    now = timezone.now()
    realms = [
        {
            "realm_id": realm_id,
            "state": shown_state(states.get(realm_id), rows.get(realm_id)),
            "active": is_active(rows.get(realm_id), now=now),
            "host": _host_of(rows.get(realm_id)),
        }
        for realm_id in ids
    ]
    return {
        "realms": realms,
        "active": sum(1 for r in realms if r["active"]),
        "capacity": settings.BEARPIT_MAX_ACTIVE_REALMS,
    }


def _outcomes(realm_ids: list[str]) -> dict[str, Any]:
    latest: dict[str, tuple[int, int, Any]] = {}
    rows = Event.objects.filter(kind=Kind.VERDICT, realm_id__in=realm_ids).values_list(
        "realm_id", "ts_ms", "id", "payload"
    )
    for realm_id, ts, pk, payload in rows:
        if realm_id not in latest or (ts, pk) > latest[realm_id][:2]:
            outcome = payload.get("outcome") if isinstance(payload, dict) else None
            latest[realm_id] = (ts, pk, outcome)
    return {realm_id: found[2] for realm_id, found in latest.items()}


def _usd(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value) if isinstance(value, str) else 0.0
    except ValueError:
        return 0.0


def _spend(realm_ids: list[str]) -> dict[str, float]:
    totals: dict[str, float] = {}
    rows = Event.objects.filter(kind=Kind.SPEND, realm_id__in=realm_ids).values_list(
        "realm_id", "payload__agent", "payload__usd"
    )
    for realm_id, agent, usd in rows:
        if isinstance(agent, str):
            totals[realm_id] = totals.get(realm_id, 0.0) + _usd(usd)
    return totals


def _duration_s(realm: Realm, now: dt.datetime) -> float | None:
    if realm.started_at is None:
        return None
    end = realm.concluded_at or (now if realm.state not in Realm.TERMINAL_STATES else None)
    end = end or realm.updated_at
    return round(max((end - realm.started_at).total_seconds(), 0.0), 3)


def run_history(*, scenario: str | None, limit: int) -> dict[str, Any]:
    """``GET /api/runs``: the newest ``limit`` realms (of one scenario), in a fixed number
    of queries."""
    qs = _rows().order_by("-created_at", "-id")
    if scenario:
        qs = qs.filter(package_name=scenario)
    rows = list(qs[:limit])
    ids = [r.realm_id for r in rows]
    states = _chronicled_states(ids)
    outcomes = _outcomes(ids)
    spend = _spend(ids)
    now = timezone.now()
    runs = [
        {
            "realm_id": r.realm_id,
            "scenario": r.package_name,
            "state": shown_state(states.get(r.realm_id), r),
            "outcome": outcomes.get(r.realm_id) or r.outcome or None,
            "spend": round(spend.get(r.realm_id, 0.0), 6),
            "duration_s": _duration_s(r, now),
            "updated": r.updated_at,
            "active": is_active(r, now=now),
        }
        for r in rows
    ]
    return {
        "runs": runs,
        "capacity": settings.BEARPIT_MAX_ACTIVE_REALMS,
        # As the realm list counts: what something still drives, of every realm.
        "active": sum(
            is_active(r, now=now) for r in _rows().exclude(state__in=Realm.TERMINAL_STATES)
        ),
    }
