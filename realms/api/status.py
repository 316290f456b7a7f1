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
from chronicle.kinds import TERMINAL_LIFECYCLE, Lifecycle
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
    state = selectors.lifecycle_state(realm_id)
    if realm is not None and realm.state == Realm.State.FAILED:
        return Lifecycle.FAILED.value
    if state is None:
        return realm.state if realm is not None else "unknown"
    if state not in TERMINAL_LIFECYCLE and not is_active(realm):
        return Lifecycle.INTERRUPTED.value
    return state


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


def realm_list() -> dict[str, Any]:
    """``{realms:[{realm_id, state, active}], active, capacity}``, most recent first."""
    rows = {r.realm_id: r for r in Realm.objects.all()}
    ids = selectors.chronicled_realm_ids()
    chronicled = set(ids)
    ids += [realm_id for realm_id in rows if realm_id not in chronicled]
    realms = [
        {
            "realm_id": realm_id,
            "state": realm_state(realm_id, rows.get(realm_id)),
            "active": is_active(rows.get(realm_id)),
        }
        for realm_id in ids
    ]
    return {
        "realms": realms,
        "active": sum(1 for r in realms if r["active"]),
        "capacity": settings.BEARPIT_MAX_ACTIVE_REALMS,
    }
