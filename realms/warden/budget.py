"""Budget policy: what happens to an agent that has spent its cap.

The gateway already refuses calls past the cap (physics); this adds the scenario's
policy on top. On the first exhaustion a LIFECYCLE ``budget_exhausted`` is chronicled;
``starve`` stops there, ``kill`` stops the agent's sandbox at once, and
``starve_then_kill`` stops it once ``grace_period`` has passed since exhaustion; a
stop is chronicled as LIFECYCLE ``agent_killed``. What was already done is read back
from the Chronicle, so calling this every tick repeats nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from django.db import transaction

from chronicle import selectors
from chronicle.kinds import Kind, Lifecycle
from chronicle.services import record_event
from realms.models import RealmAgent
from realms.warden.snapshot import AgentState, LiveSnapshot

log = logging.getLogger(__name__)

POLICIES = ("starve", "starve_then_kill", "kill")
DEFAULT_GRACE_S = 60.0  # starve_then_kill without a grace_period still starves for a minute
KILL_REASON = "budget exhausted"


@dataclass(frozen=True)
class BudgetAction:
    agent_id: str
    action: str  # "exhausted" | "killed" | "stop_failed"
    policy: str


def enforce_budgets(
    snapshot: LiveSnapshot, *, stop_agent: Callable[[str], None]
) -> list[BudgetAction]:
    """Apply each exhausted agent's policy once; ``stop_agent(agent_id)`` stops its sandbox."""
    actions: list[BudgetAction] = []
    exhausted_at = _agent_marks(snapshot.realm_id, Lifecycle.BUDGET_EXHAUSTED)
    killed = set(_agent_marks(snapshot.realm_id, Lifecycle.AGENT_KILLED))
    for agent in snapshot.agents.values():
        if not agent.exhausted:
            continue
        policy = agent.on_exhausted if agent.on_exhausted in POLICIES else "starve"
        if agent.agent_id not in exhausted_at:
            record_exhausted(snapshot.realm_id, agent, policy, ts_ms=snapshot.now_ms)
            exhausted_at[agent.agent_id] = snapshot.now_ms
            actions.append(BudgetAction(agent.agent_id, "exhausted", policy))
        if policy == "starve" or agent.agent_id in killed or agent.stopped:
            continue
        if policy == "starve_then_kill":
            grace_ms = (DEFAULT_GRACE_S if agent.grace_s is None else agent.grace_s) * 1000
            if snapshot.now_ms - exhausted_at[agent.agent_id] < grace_ms:
                continue
        try:
            stop_agent(agent.agent_id)
        except Exception as exc:  # a stop that fails is retried next tick, and said once
            log.warning("budget stop of %s/%s failed", snapshot.realm_id, agent.agent_id)
            _record_stop_failure(snapshot.realm_id, agent.agent_id, exc)
            actions.append(BudgetAction(agent.agent_id, "stop_failed", policy))
            continue
        record_killed(snapshot.realm_id, agent.agent_id, policy)
        actions.append(BudgetAction(agent.agent_id, "killed", policy))
    return actions


@transaction.atomic
def record_exhausted(
    realm_id: str, agent: AgentState, policy: str, *, ts_ms: int | None = None
) -> None:
    record_event(
        realm_id,
        Kind.LIFECYCLE,
        {
            "event": Lifecycle.BUDGET_EXHAUSTED.value,
            "agent": agent.agent_id,
            "policy": policy,
            "spend": round(agent.spend_usd, 6),
            "cap": agent.cap_usd,
        },
        ts_ms=ts_ms,
    )


@transaction.atomic
def record_killed(realm_id: str, agent_id: str, policy: str) -> None:
    record_event(
        realm_id,
        Kind.LIFECYCLE,
        {
            "event": Lifecycle.AGENT_KILLED.value,
            "agent": agent_id,
            "reason": KILL_REASON,
            "policy": policy,
        },
    )
    RealmAgent.objects.filter(realm__realm_id=realm_id, agent_id=agent_id).update(
        state=RealmAgent.State.KILLED
    )


def _record_stop_failure(realm_id: str, agent_id: str, exc: Exception) -> None:
    already = selectors.events(realm_id, Kind.SYSTEM).filter(
        payload__event="agent_stop_failed", payload__agent=agent_id
    )
    if already.exists():
        return
    with transaction.atomic():
        record_event(
            realm_id,
            Kind.SYSTEM,
            {
                "event": "agent_stop_failed",
                "agent": agent_id,
                "reason": KILL_REASON,
                "error": type(exc).__name__,
            },
        )


def _agent_marks(realm_id: str, value: Lifecycle) -> dict[str, int]:
    """Agent → time of its first lifecycle event of this kind."""
    marks: dict[str, int] = {}
    for event in selectors.lifecycle_events(realm_id, value):
        agent = event.payload.get("agent") if isinstance(event.payload, dict) else None
        if isinstance(agent, str) and agent not in marks:
            marks[agent] = event.ts_ms
    return marks
