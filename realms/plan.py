"""The realm plan: the resolved realm, parsed once from its two stored dicts.

A realm stores what it was launched with as two JSON dicts on its row: ``project``
(the resolved package snapshot) and ``run_config`` (what launch resolved: models,
budgets, flags). Every stage reads the typed ``RealmPlan`` instead of the dicts, and the
rules that follow from them (who is the referee, who may write to whom, who is out)
are decided here, once.

The parser is forgiving on purpose: rows written by older launches, or rows that carry
only part of the snapshot, parse to the same defaults the stages used to apply by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from realms.packages.schema.common import parse_duration
from realms.packages.tools import canonical_tool_name

if TYPE_CHECKING:
    from realms.models import Realm

REFEREE = "referee"
PARTICIPANT = "participant"
REFEREE_SKILL = "referee-basics"
AGENT_SKILL = "agent-basics"
DEFAULT_SILENCE_TIMEOUT_S = 90.0


def is_referee_role(role: object) -> bool:
    return role == REFEREE


def referee_of(roster: Iterable[tuple[str, object]]) -> str | None:
    """The realm's referee: the first agent, in roster order, whose role is ``referee``.

    ``roster`` is ``(agent id, role)`` pairs, so launch can ask before any plan exists.
    """
    return next((agent_id for agent_id, role in roster if is_referee_role(role)), None)


def role_skill(role: object) -> str:
    """The built-in skill every agent gets for its role."""
    return REFEREE_SKILL if is_referee_role(role) else AGENT_SKILL


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _texts(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value))


def _opt_text(value: object) -> str | None:
    return None if value is None else str(value)


def _opt_float(value: object) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _opt_int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


@dataclass(frozen=True, slots=True)
class DmRule:
    """An agent's ``private_messaging`` declaration."""

    enabled: bool = False
    include_referee: bool = False
    peers: tuple[str, ...] = ()
    max_per_round: int = 0

    @classmethod
    def parse(cls, raw: object) -> DmRule:
        pm = _map(raw)
        return cls(
            enabled=bool(pm.get("enabled")),
            include_referee=bool(pm.get("include_referee")),
            peers=_texts(pm.get("peers")),
            max_per_round=int(pm.get("max_per_round") or 0),
        )


class DmParty(Protocol):
    """What the DM rule needs to know of an agent."""

    @property
    def id(self) -> str: ...

    @property
    def is_referee(self) -> bool: ...

    @property
    def dm(self) -> DmRule: ...


def may_write(sender: DmParty, recipient: DmParty) -> bool:
    """Whether ``sender`` may send ``recipient`` a private message.

    The sender must have private messaging enabled, list the recipient among its
    ``peers`` (or list none), and may reach the referee only with ``include_referee``.
    """
    rule = sender.dm
    if not rule.enabled or sender.id == recipient.id:
        return False
    if rule.peers and recipient.id not in rule.peers:
        return False
    return not recipient.is_referee or rule.include_referee


def shares_dm_room(a: DmParty, b: DmParty) -> bool:
    """A pair gets a DM room when either side may write to the other."""
    return may_write(a, b) or may_write(b, a)


def permitted_pairs(agents: Sequence[DmParty]) -> list[tuple[str, str]]:
    """Unordered pairs, in roster order, that get a DM room."""
    return [
        (a.id, b.id) for i, a in enumerate(agents) for b in agents[i + 1 :] if shares_dm_room(a, b)
    ]


@dataclass(frozen=True, slots=True)
class SkillRef:
    source: str
    ref: str


@dataclass(frozen=True, slots=True)
class PlanAgent:
    """One agent of the roster: what it declared, and what launch resolved for it."""

    id: str
    role: str = PARTICIPANT
    name: str | None = None
    description: str | None = None
    persona: str = ""
    rubric: str | None = None
    goals: tuple[str, ...] = ()
    responsibilities: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    skills: tuple[SkillRef, ...] = ()
    local_skills: Mapping[str, str] = field(default_factory=dict)
    skills_mode: str = "inline"
    resource_files: Mapping[str, str] = field(default_factory=dict)
    dm: DmRule = DmRule()
    grace_s: float | None = None
    verdict_ends_realm: bool = False
    # resolved at launch (run_config)
    model_category: str | None = None
    model: str = ""
    provider: str = ""
    effort: str | None = None
    context_length: int | None = None
    tool_mode: str = "native"
    max_output_tokens: int | None = None
    budget_usd: float | None = None
    on_exhausted: str = "starve"

    @property
    def is_referee(self) -> bool:
        return is_referee_role(self.role)

    @property
    def role_skill(self) -> str:
        return role_skill(self.role)

    @property
    def granted(self) -> frozenset[str]:
        """Granted tools under their current names (older packages spell ``family.verb``)."""
        return frozenset(canonical_tool_name(t) for t in self.tools)


RefereeCue = Literal["round", "turn", "none"]
_CUES: tuple[RefereeCue, ...] = ("round", "turn", "none")


@dataclass(frozen=True, slots=True)
class TurnsPlan:
    referee_cue: RefereeCue = "round"
    min_rounds_before_verdict: int = 0
    silence_timeout_s: float = DEFAULT_SILENCE_TIMEOUT_S
    retire_after_misses: int = 0

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> TurnsPlan:
        return cls(
            referee_cue=next((c for c in _CUES if c == raw.get("referee_cue")), "round"),
            min_rounds_before_verdict=int(raw.get("min_rounds_before_verdict") or 0),
            silence_timeout_s=float(raw.get("silence_timeout_s") or DEFAULT_SILENCE_TIMEOUT_S),
            retire_after_misses=int(raw.get("retire_after_misses") or 0),
        )


DEFAULT_LEASE_S = 600.0


@dataclass(frozen=True, slots=True)
class TaskBoardPlan:
    """The task-board mechanic: how long a claim lasts unrenewed, who may assign, and
    whether a claim gets its own git worktree of the shared folder's repository."""

    lease_s: float = DEFAULT_LEASE_S
    leads: tuple[str, ...] = ()
    worktrees: bool = False

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> TaskBoardPlan:
        lease = raw.get("lease")
        try:
            lease_s = parse_duration(str(lease)) if lease else DEFAULT_LEASE_S
        except ValueError:
            lease_s = DEFAULT_LEASE_S
        return cls(
            lease_s=lease_s, leads=_texts(raw.get("leads")), worktrees=raw.get("worktrees") is True
        )


DEFAULT_SCHEDULES_PER_AGENT = 10
DEFAULT_MIN_EVERY_S = 60.0
DEFAULT_JOBS_PER_AGENT = 2


@dataclass(frozen=True, slots=True)
class SchedulesPlan:
    """The schedules mechanic: how many active schedules an agent may hold, and the
    shortest interval of a repeating one."""

    max_per_agent: int = DEFAULT_SCHEDULES_PER_AGENT
    min_every_s: float = DEFAULT_MIN_EVERY_S

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> SchedulesPlan:
        every = raw.get("min_every")
        try:
            min_every_s = parse_duration(str(every)) if every else DEFAULT_MIN_EVERY_S
        except ValueError:
            min_every_s = DEFAULT_MIN_EVERY_S
        count = raw.get("max_per_agent")
        return cls(
            max_per_agent=count
            if isinstance(count, int) and count > 0
            else DEFAULT_SCHEDULES_PER_AGENT,
            min_every_s=min_every_s,
        )


@dataclass(frozen=True, slots=True)
class JobsPlan:
    """The background-jobs mechanic: how many jobs one agent may run at once."""

    max_per_agent: int = DEFAULT_JOBS_PER_AGENT

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> JobsPlan:
        count = raw.get("max_per_agent")
        return cls(
            max_per_agent=count if isinstance(count, int) and count > 0 else DEFAULT_JOBS_PER_AGENT
        )


@dataclass(frozen=True, slots=True)
class LoopsPlan:
    """``spec.loops``: how many of an agent's own last acts are compared, how alike two
    messages must be to count as one, how many alike acts make a loop, and what follows."""

    window: int = 6
    threshold: float = 0.9
    repeats: int = 3
    action: Literal["nudge", "conclude"] = "nudge"

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> LoopsPlan:
        return cls(
            window=int(raw.get("window") or 6),
            threshold=float(raw.get("threshold") or 0.9),
            repeats=int(raw.get("repeats") or 3),
            action="conclude" if raw.get("action") == "conclude" else "nudge",
        )


@dataclass(frozen=True, slots=True)
class EnvironmentPlan:
    shared_folder: bool = False
    network_egress: str = "model_only"
    allow_side_channels: bool = True


@dataclass(frozen=True, slots=True)
class RealmPlan:
    """Everything the stages of a realm read from its launch, typed and parsed once."""

    name: str = "realm"
    title: str | None = None
    """The package's declared name, when it declares one (the report's heading)."""
    provider: str = ""
    """The provider profile launch chose (``offline`` for the keyless scripted one)."""
    package: str = ""
    """The package launch read, as it was named (a path or a library name)."""
    goals: tuple[str, ...] = ()
    guidelines: str | None = None
    restrictions: str | None = None
    agents: tuple[PlanAgent, ...] = ()
    turns: TurnsPlan | None = None
    machine: Mapping[str, Any] | None = None
    """The declared state machine, as declared (the machine engine validates it)."""
    task_board: TaskBoardPlan | None = None
    schedules: SchedulesPlan | None = None
    jobs: JobsPlan | None = None
    termination: tuple[Mapping[str, Any], ...] = ()
    """The declared termination conditions, as declared (the Warden parses them)."""
    environment: EnvironmentPlan = EnvironmentPlan()
    outputs: tuple[str, ...] = ()
    tool_policy: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    project_resources: Mapping[str, str] = field(default_factory=dict)
    project_skills: Mapping[str, str] = field(default_factory=dict)
    require_mention: bool = True
    referee_sees_all: bool = False
    referee_opens: bool = False
    stall_nudge: bool = True
    loops: LoopsPlan | None = None
    """Loop and echo detection; ``None`` (the default) watches for nothing."""
    realmtools: bool = False
    free_response: bool = False
    parameters: Mapping[str, object] = field(default_factory=dict)
    """The bound parameter values, as launch stored them (JSON values)."""

    @classmethod
    def parse(cls, project: object, run_config: object) -> RealmPlan:
        """The plan of a realm from its ``(project, run_config)`` dicts."""
        return _parse(_map(project), _map(run_config))

    @property
    def roster(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.agents)

    @property
    def referee(self) -> str | None:
        return referee_of((a.id, a.role) for a in self.agents)

    @property
    def participants(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.agents if not a.is_referee)

    def agent(self, agent_id: str) -> PlanAgent | None:
        return next((a for a in self.agents if a.id == agent_id), None)

    @property
    def verdict_ends_realm(self) -> bool:
        """Whether an agent (the referee) holds the realm-ending verdict power."""
        return any(a.verdict_ends_realm for a in self.agents)

    @property
    def referee_drives(self) -> bool:
        """A referee that opens the realm wakes the players itself (format §2.2)."""
        return self.referee_opens and self.referee is not None

    @property
    def referee_reads_commons(self) -> bool:
        return bool((self.machine or {}).get("referee_reads_commons"))

    def dm_partners(self, agent_id: str) -> frozenset[str]:
        """Agents sharing a DM room with ``agent_id``."""
        me = self.agent(agent_id)
        if me is None:
            return frozenset()
        return frozenset(o.id for o in self.agents if o.id != me.id and shares_dm_room(me, o))

    def dm_quotas(self) -> dict[str, int]:
        """Each sender's ``max_per_round`` (0: unlimited)."""
        return {a.id: a.dm.max_per_round for a in self.agents}


def _roster(project: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    # Older snapshots keep agents as a map of id → agent, sorted by id for roster order.
    agents = project.get("agents")
    if isinstance(agents, Mapping):
        return [{**_map(v), "id": k} for k, v in sorted(agents.items()) if isinstance(v, Mapping)]
    return [a for a in _list(agents) if isinstance(a, Mapping) and "id" in a]


def _grace(budget: Mapping[str, Any]) -> float | None:
    grace = budget.get("grace_period")
    if isinstance(grace, bool) or grace is None:
        return None
    if isinstance(grace, int | float):
        return float(grace)  # older snapshots wrote bare seconds
    try:
        return parse_duration(str(grace))
    except ValueError:
        return None


def _agent(declared: Mapping[str, Any], resolved: Mapping[str, Any]) -> PlanAgent:
    # Roles come from the declaration; run_config repeats them for realms without one.
    role = declared.get("role", resolved.get("role")) or PARTICIPANT
    powers = _map(declared.get("powers"))
    context = resolved.get("context_length")
    return PlanAgent(
        id=str(declared.get("id", resolved.get("id"))),
        role=REFEREE if is_referee_role(role) else PARTICIPANT,
        name=_opt_text(declared.get("name")),
        description=_opt_text(declared.get("description")),
        persona=str(declared.get("persona") or ""),
        rubric=_opt_text(declared.get("rubric")),
        goals=_texts(declared.get("goals")),
        responsibilities=_texts(declared.get("responsibilities")),
        tools=_texts(declared.get("tools")),
        skills=tuple(
            SkillRef(str(s.get("source")), str(s.get("ref")))
            for s in _list(declared.get("skills"))
            if isinstance(s, Mapping)
        ),
        local_skills=dict(_map(declared.get("local_skills"))),
        skills_mode="on_demand" if declared.get("skills_mode") == "on_demand" else "inline",
        resource_files=dict(_map(declared.get("resource_files"))),
        dm=DmRule.parse(declared.get("private_messaging", resolved.get("private_messaging"))),
        grace_s=_grace(_map(declared.get("budget"))),
        verdict_ends_realm=bool(
            resolved.get("verdict_ends_realm") or powers.get("verdict_ends_realm")
        ),
        model_category=_opt_text(resolved.get("model_category", declared.get("model_category"))),
        model=str(resolved.get("model") or ""),
        provider=str(resolved.get("provider") or ""),
        effort=_opt_text(resolved.get("effort")),
        context_length=None if context is None else int(context),
        tool_mode=str(resolved.get("tool_mode") or "native"),
        max_output_tokens=_opt_int(resolved.get("max_output_tokens")),
        budget_usd=_opt_float(resolved.get("budget_usd")),
        on_exhausted=str(resolved.get("on_exhausted") or "starve"),
    )


def _agents(project: Mapping[str, Any], run_config: Mapping[str, Any]) -> tuple[PlanAgent, ...]:
    declared = _roster(project)
    resolved = {
        str(a["id"]): a
        for a in _list(run_config.get("agents"))
        if isinstance(a, Mapping) and "id" in a
    }
    known = {str(a["id"]) for a in declared}
    out = [_agent(a, resolved.get(str(a["id"]), {})) for a in declared]
    out += [_agent({}, a) for agent_id, a in resolved.items() if agent_id not in known]
    return tuple(out)


def _environment(spec: Mapping[str, Any], run_config: Mapping[str, Any]) -> EnvironmentPlan:
    # run_config's is what launch resolved (and what a standalone agent is given), so it
    # wins; the package's declaration serves rows that carry no run_config.
    if isinstance(run_config.get("environment"), Mapping):
        env = run_config["environment"]
        shared = bool(env.get("shared_folder"))
    else:
        env = _map(spec.get("environment"))
        shared = bool(_map(env.get("shared_folder")).get("enabled"))
    return EnvironmentPlan(
        shared_folder=shared,
        network_egress=str(env.get("network_egress") or "model_only"),
        allow_side_channels=bool(env.get("allow_side_channels", True)),
    )


def _machine(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for mechanic in _list(spec.get("mechanics")):
        if isinstance(mechanic, Mapping) and mechanic.get("kind") == "state-machine":
            machine = mechanic.get("machine")
            return machine if isinstance(machine, Mapping) else None
    return None


def _task_board(spec: Mapping[str, Any]) -> TaskBoardPlan | None:
    for mechanic in _list(spec.get("mechanics")):
        if isinstance(mechanic, Mapping) and mechanic.get("kind") == "task-board":
            return TaskBoardPlan.parse(mechanic)
    return None


def _schedules(spec: Mapping[str, Any]) -> SchedulesPlan | None:
    for mechanic in _list(spec.get("mechanics")):
        if isinstance(mechanic, Mapping) and mechanic.get("kind") == "schedules":
            return SchedulesPlan.parse(mechanic)
    return None


def _jobs(spec: Mapping[str, Any]) -> JobsPlan | None:
    for mechanic in _list(spec.get("mechanics")):
        if isinstance(mechanic, Mapping) and mechanic.get("kind") == "background-jobs":
            return JobsPlan.parse(mechanic)
    return None


def _title(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _parse(project: Mapping[str, Any], run_config: Mapping[str, Any]) -> RealmPlan:
    spec = _map(project.get("spec"))
    meta = _map(project.get("metadata"))
    # Turns: run_config holds them as resolved (silence floored for the provider, a rerun's
    # override applied) and launch writes the same into the snapshot; rows without a
    # run_config fall back to the snapshot's.
    raw_turns = run_config["turns"] if "turns" in run_config else spec.get("turns")
    # Termination: the snapshot keeps every declared field (content_match, match_mode,
    # scope); run_config's copy drops some, so it only serves rows without a snapshot.
    raw_end = spec.get("termination")
    if raw_end is None:
        raw_end = run_config.get("termination")
    # referee_opens: the package's declaration when the snapshot carries it.
    opens = spec["referee_opens"] if "referee_opens" in spec else run_config.get("referee_opens")
    tools = _map(spec.get("tools"))
    return RealmPlan(
        name=str(meta.get("name", "realm")),
        title=_title(meta.get("name")),
        provider=str(run_config.get("provider") or ""),
        package=str(run_config.get("package") or ""),
        goals=_texts(spec.get("goals")),
        guidelines=_opt_text(spec.get("guidelines")),
        restrictions=_opt_text(spec.get("restrictions")),
        agents=_agents(project, run_config),
        turns=TurnsPlan.parse(raw_turns) if isinstance(raw_turns, Mapping) and raw_turns else None,
        machine=_machine(spec),
        task_board=_task_board(spec),
        schedules=_schedules(spec),
        jobs=_jobs(spec),
        termination=tuple(_list(raw_end)),
        environment=_environment(spec, run_config),
        outputs=_texts(spec.get("outputs")),
        tool_policy={canonical_tool_name(str(k)): _map(v) for k, v in tools.items()},
        project_resources=dict(_map(project.get("project_resources"))),
        project_skills=dict(_map(project.get("project_skills"))),
        require_mention=bool(run_config.get("require_mention", True)),
        referee_sees_all=bool(run_config.get("referee_sees_all")),
        referee_opens=bool(opens),
        stall_nudge=bool(run_config.get("stall_nudge", True)),
        loops=LoopsPlan.parse(spec["loops"]) if isinstance(spec.get("loops"), Mapping) else None,
        realmtools=bool(run_config.get("realmtools")),
        free_response=bool(run_config.get("free_response")),
        parameters={str(k): v for k, v in _map(run_config.get("parameters")).items()},
    )


_CACHE_ATTR = "_realm_plan"


def plan_of(realm: Realm) -> RealmPlan:
    """The plan of a Realm row, parsed once per row object.

    The snapshot never changes after launch, so the parse is kept on the row; a row read
    afresh (a new tick) parses again, which costs a walk over two small dicts.
    """
    cached = realm.__dict__.get(_CACHE_ATTR)
    if isinstance(cached, RealmPlan):
        return cached
    plan = RealmPlan.parse(realm.project, realm.run_config)
    realm.__dict__[_CACHE_ATTR] = plan
    return plan
