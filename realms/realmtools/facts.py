"""Realm facts realmtools needs: the realm's plan, with its state read afresh per call.

Roster order is turn order. Who is out comes from ``chronicle.selectors.agents_out``, which
reads the Chronicle, the record of what happened.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from realms.models import Realm, RealmAgent
from realms.plan import PlanAgent, RealmPlan, TurnsPlan, plan_of
from realms.realmtools.errors import Refusal

LIVE_STATES = frozenset({Realm.State.RUNNING, Realm.State.CONCLUDING})


@dataclass(frozen=True)
class RealmFacts:
    realm_id: str
    state: str
    plan: RealmPlan

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def roster(self) -> tuple[str, ...]:
        return self.plan.roster

    @property
    def participants(self) -> tuple[str, ...]:
        return self.plan.participants

    @property
    def referee(self) -> str | None:
        return self.plan.referee

    def agent(self, agent_id: str) -> PlanAgent | None:
        return self.plan.agent(agent_id)

    @property
    def turns(self) -> TurnsPlan | None:
        return self.plan.turns

    @property
    def machine(self) -> Mapping[str, Any] | None:
        return self.plan.machine

    @property
    def tool_policy(self) -> Mapping[str, Mapping[str, Any]]:
        return self.plan.tool_policy

    def dm_partners(self, agent_id: str) -> frozenset[str]:
        """Agents sharing a DM room with ``agent_id`` (the rule: ``plan.may_write``)."""
        return self.plan.dm_partners(agent_id)


def load_facts(realm_id: str) -> RealmFacts:
    """Facts of one realm, fresh from the database (roles and grants re-read per call)."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        raise Refusal(f"realm {realm_id} does not exist")
    plan = plan_of(realm)
    if not plan.agents:
        # A row without a roster in its snapshot: the realm's agent rows name the roster.
        rows = RealmAgent.objects.filter(realm=realm).order_by("position")
        agents = tuple(PlanAgent(id=row.agent_id, role=row.role) for row in rows)
        plan = dataclasses.replace(plan, agents=agents)
    return RealmFacts(realm_id=realm_id, state=realm.state, plan=plan)
