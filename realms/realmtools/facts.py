"""Realm facts realmtools needs, read from the Realm row's project snapshot.

The snapshot is the resolved project: a dict with ``spec`` and ``agents`` (a
list in roster order, or a map of id to agent). Roster order is turn order.
Eliminations come from the Chronicle, which is the record of what happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.models import Realm, RealmAgent
from realms.packages.tools import canonical_tool_name
from realms.realmtools.errors import Refusal

LIVE_STATES = frozenset({Realm.State.RUNNING, Realm.State.CONCLUDING})


@dataclass(frozen=True)
class AgentFacts:
    id: str
    role: str  # "participant" | "referee"
    tools: frozenset[str] = frozenset()
    dm_enabled: bool = False
    dm_include_referee: bool = False
    dm_peers: tuple[str, ...] = ()

    @property
    def is_referee(self) -> bool:
        return self.role == "referee"


@dataclass(frozen=True)
class RealmFacts:
    realm_id: str
    state: str
    agents: tuple[AgentFacts, ...]
    spec: Mapping[str, Any] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def roster(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.agents)

    @property
    def participants(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.agents if not a.is_referee)

    @property
    def referee(self) -> str | None:
        return next((a.id for a in self.agents if a.is_referee), None)

    def agent(self, agent_id: str) -> AgentFacts | None:
        return next((a for a in self.agents if a.id == agent_id), None)

    @property
    def turns(self) -> Mapping[str, Any] | None:
        turns = self.spec.get("turns")
        return turns if isinstance(turns, Mapping) else None

    @property
    def machine(self) -> Mapping[str, Any] | None:
        for mechanic in self.spec.get("mechanics") or []:
            if isinstance(mechanic, Mapping) and mechanic.get("kind") == "state-machine":
                machine = mechanic.get("machine")
                return machine if isinstance(machine, Mapping) else None
        return None

    @property
    def tool_policy(self) -> Mapping[str, Any]:
        tools = self.spec.get("tools")
        if not isinstance(tools, Mapping):
            return {}
        # Older packages spell granted tools ``family.verb``.
        return {canonical_tool_name(str(name)): policy for name, policy in tools.items()}

    def _dm_allowed(self, sender: AgentFacts, recipient: AgentFacts) -> bool:
        if not sender.dm_enabled or sender.id == recipient.id:
            return False
        if sender.dm_peers and recipient.id not in sender.dm_peers:
            return False
        return not recipient.is_referee or sender.dm_include_referee

    def dm_partners(self, agent_id: str) -> frozenset[str]:
        """Agents sharing a DM room with ``agent_id`` (a room exists if either side may DM)."""
        me = self.agent(agent_id)
        if me is None:
            return frozenset()
        return frozenset(
            other.id
            for other in self.agents
            if other.id != me.id and (self._dm_allowed(me, other) or self._dm_allowed(other, me))
        )


def _agent_from_snapshot(raw: Mapping[str, Any]) -> AgentFacts:
    pm = raw.get("private_messaging") or {}
    return AgentFacts(
        id=str(raw["id"]),
        role="referee" if raw.get("role") == "referee" else "participant",
        tools=frozenset(canonical_tool_name(str(t)) for t in raw.get("tools") or []),
        dm_enabled=bool(pm.get("enabled")),
        dm_include_referee=bool(pm.get("include_referee")),
        dm_peers=tuple(str(p) for p in pm.get("peers") or []),
    )


def _snapshot_agents(project: Mapping[str, Any]) -> list[AgentFacts]:
    agents = project.get("agents")
    if isinstance(agents, Mapping):
        return [_agent_from_snapshot({"id": key, **value}) for key, value in sorted(agents.items())]
    if isinstance(agents, list):
        return [_agent_from_snapshot(a) for a in agents if isinstance(a, Mapping) and "id" in a]
    return []


def load_facts(realm_id: str) -> RealmFacts:
    """Facts of one realm, fresh from the database (roles and grants re-read per call)."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        raise Refusal(f"realm {realm_id} does not exist")
    project: Mapping[str, Any] = realm.project if isinstance(realm.project, Mapping) else {}
    agents = _snapshot_agents(project)
    if not agents:
        agents = [
            AgentFacts(id=row.agent_id, role=row.role)
            for row in RealmAgent.objects.filter(realm=realm).order_by("position")
        ]
    spec = project.get("spec")
    return RealmFacts(
        realm_id=realm_id,
        state=realm.state,
        agents=tuple(agents),
        spec=spec if isinstance(spec, Mapping) else {},
    )


def eliminated(realm_id: str) -> frozenset[str]:
    """Participants removed by the referee or stopped for good by the platform."""
    named = {
        e.payload.get("agent")
        for e in Event.objects.filter(realm_id=realm_id, kind=Kind.ELIMINATION).only("payload")
    }
    stopped = RealmAgent.objects.filter(
        realm__realm_id=realm_id,
        state__in=[RealmAgent.State.ELIMINATED, RealmAgent.State.KILLED],
    ).values_list("agent_id", flat=True)
    return frozenset(str(a) for a in named if a) | frozenset(stopped)
