"""``project.json``: metadata, the realm-wide spec, and the roster once loaded."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from realms.packages.schema.agent import Agent, AgentManifest
from realms.packages.schema.common import (
    Duration,
    GoalList,
    LongText,
    ShortText,
    Strict,
    TagText,
    ToolName,
    fail,
)
from realms.packages.schema.machine import MachineDef

TerminationType = Literal[
    "duration",
    "stall",
    "file",
    "message",
    "budget_exhausted",
    "referee_verdict",
    "machine_terminal",
    "manual",
    "no_active_participants",
    "tasks_complete",
]
TERMINATION_TYPES: tuple[str, ...] = get_args(TerminationType)
BUILTIN_RULESETS = ("dominance", "high-bid", "low-bid", "plurality", "majority", "unanimous")


def _scalar_text(value: Any) -> Any:
    # Authors write ``"default": 10``; parameter values are text either way.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if value is None or isinstance(value, str):
        return value
    fail("a string, number or boolean")


ScalarText = Annotated[
    str,
    BeforeValidator(_scalar_text),
    WithJsonSchema({"type": ["string", "number", "boolean"]}),
]


class ProjectMeta(Strict):
    name: str = Field(min_length=1, max_length=120)
    description: str | None = Field(default=None, max_length=2000)
    author: str | None = Field(default=None, max_length=120)
    license: str | None = Field(default=None, max_length=120)
    category: str | None = Field(default=None, max_length=60)
    tags: list[TagText] = Field(default_factory=list, max_length=30)
    created: str | None = Field(default=None, max_length=40)


class ParameterSpec(Strict):
    """Metadata layered over a ``${name}`` placeholder found in the prose."""

    default: ScalarText | None = Field(default=None, max_length=2000)
    description: str | None = Field(default=None, max_length=2000)
    type: Literal["string", "int", "number", "bool"] = "string"
    choices: list[ScalarText] | None = None
    multiline: bool = False
    min: float | None = None
    max: float | None = None


class SharedFolder(Strict):
    enabled: bool = False


class Environment(Strict):
    shared_folder: SharedFolder = Field(default_factory=SharedFolder)
    network_egress: Literal["none", "model_only", "allowlist", "open"] = "model_only"
    egress_allowlist: list[str] = Field(default_factory=list)
    allow_side_channels: bool = True
    require_mention: bool = True


class Turns(Strict):
    """Floor control; values that are planned but not implemented parse and are then refused."""

    policy: Literal["one-at-a-time"] = "one-at-a-time"
    advance: Literal["one-message", "quiet-gap", "time-slice"] = "one-message"
    enforcement: Literal["physics", "law"] = "physics"
    order: Literal["roster", "random"] = "roster"
    referee_cue: Literal["round", "turn", "none"] = "round"
    min_rounds_before_verdict: int = Field(default=0, ge=0, le=10_000)
    silence_timeout_s: float = Field(default=90.0, gt=0, le=86_400)
    retire_after_misses: int = Field(default=0, ge=0, le=1000)


class TerminationCondition(Strict):
    type: TerminationType
    limit: Duration | None = None
    path: str | None = Field(default=None, max_length=300)
    content_match: str | None = Field(default=None, max_length=500)
    count: int | None = Field(default=None, ge=1, le=1_000_000)
    channel: str | None = Field(default=None, max_length=100)
    pattern: str | None = Field(default=None, max_length=500)
    match_mode: Literal["substring", "exact", "regex"] = "substring"
    scope: Literal["any_agent", "all_agents", "realm_total"] | None = None


class Mechanic(Strict):
    kind: Literal["sealed-submit", "state-machine", "task-board", "schedules", "background-jobs"]
    ruleset: str | None = Field(default=None, max_length=120)
    config: dict[str, Any] = Field(default_factory=dict)
    machine: MachineDef | None = None
    lease: Duration | None = Field(
        default=None,
        description="Task board: how long a claim lasts without work by its claimant "
        "(default 10m).",
    )
    leads: list[ShortText] | None = Field(
        default=None,
        max_length=50,
        description="Task board: participants who may assign tasks, besides the referee.",
    )
    worktrees: bool | None = Field(
        default=None,
        description="Task board: when the shared folder holds a git repository, each claim "
        "gets its own worktree and branch (task/<id>); task_complete commits it and "
        "task_merge merges it.",
    )
    max_per_agent: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="Schedules: how many active schedules one agent may hold (default 10, "
        "at most 100). Background jobs: how many may run at once per agent (default 2, "
        "at most 8).",
    )
    min_every: Duration | None = Field(
        default=None,
        description="Schedules: the shortest interval of a repeating schedule, every or "
        "cron (default 1m, from 30s to 1d).",
    )


class LoopDetection(Strict):
    """The Warden's watch for an agent repeating itself (near-identical messages, or the
    same tool call with the same arguments) among its own last ``window`` acts."""

    window: int = Field(default=6, ge=2, le=100)
    threshold: float = Field(default=0.9, ge=0.5, le=1.0)
    repeats: int = Field(default=3, ge=2, le=100)
    action: Literal["nudge", "conclude"] = "nudge"

    @model_validator(mode="after")
    def _repeats_fit(self) -> LoopDetection:
        if self.repeats > self.window:
            raise PydanticCustomError(
                "repeats_over_window",
                "repeats ({repeats}) must not exceed window ({window})",
                {"repeats": self.repeats, "window": self.window},
            )
        return self


class ProjectSpec(Strict):
    goals: GoalList = Field(default_factory=list)
    guidelines: LongText | None = None
    restrictions: LongText | None = None
    parameters: dict[ShortText, ParameterSpec] = Field(default_factory=dict)
    environment: Environment = Field(default_factory=Environment)
    termination: list[TerminationCondition] = Field(default_factory=list)
    mechanics: list[Mechanic] = Field(default_factory=list)
    turns: Turns | None = None
    stall_nudge: bool = True
    loops: LoopDetection | None = None
    referee_opens: bool = False
    provide_tools: bool = True
    tools: dict[ToolName, dict[str, Any]] = Field(default_factory=dict)
    outputs: list[Annotated[str, Field(min_length=1, max_length=300)]] = Field(
        default_factory=list, max_length=100
    )


class ProjectManifest(Strict):
    """What an author writes in ``project.json`` (a flat manifest may carry ``agents``)."""

    api_version: str = Field(default="bearpit/v1alpha1", alias="apiVersion", max_length=120)
    kind: Literal["Project"] = "Project"
    metadata: ProjectMeta
    spec: ProjectSpec = Field(default_factory=ProjectSpec)
    agents: list[AgentManifest] = Field(default_factory=list, max_length=200)


class Project(ProjectManifest):
    """A loaded package: the manifest, the roster in roster order, and the loaded texts."""

    agents: list[Agent] = Field(default_factory=list)  # type: ignore[assignment]
    project_resources: dict[str, str] = Field(
        default_factory=dict,
        description="Path → text of the project-level resources/ (every agent receives them).",
    )
    project_skills: dict[str, str] = Field(
        default_factory=dict,
        description="Skill name → SKILL.md text of the project's skills/ (every agent gets them).",
    )

    @property
    def referee(self) -> Agent | None:
        return next((agent for agent in self.agents if agent.is_referee), None)

    @property
    def participants(self) -> list[Agent]:
        return [agent for agent in self.agents if not agent.is_referee]

    def agent(self, agent_id: str) -> Agent | None:
        return next((agent for agent in self.agents if agent.id == agent_id), None)

    @property
    def machine(self) -> MachineDef | None:
        return next(
            (m.machine for m in self.spec.mechanics if m.kind == "state-machine" and m.machine),
            None,
        )

    @property
    def granted_tools(self) -> list[str]:
        return sorted({name for agent in self.agents for name in agent.tools})

    @property
    def realmtools_wired(self) -> bool:
        """Whether agents get the realmtools MCP server.

        The four triggers of the format, plus any granted tool: granted tools are served
        through realmtools, so a realm that grants one needs the server even without them.
        """
        if not self.spec.provide_tools:
            return False
        return bool(
            self.spec.mechanics
            or self.referee is not None
            or self.spec.turns is not None
            or any(agent.private_messaging.enabled for agent in self.agents)
            or self.granted_tools
        )

    @property
    def effective_termination(self) -> list[TerminationCondition]:
        """Declared conditions, plus ``referee_verdict`` when the referee's verdict ends it."""
        conditions = list(self.spec.termination)
        referee = self.referee
        if (
            referee is not None
            and referee.powers is not None
            and referee.powers.verdict_ends_realm
            and not any(c.type == "referee_verdict" for c in conditions)
        ):
            conditions.append(TerminationCondition(type="referee_verdict"))
        return conditions

    def snapshot(self) -> dict[str, Any]:
        """A JSON-serialisable copy that ``Project.model_validate`` reads back unchanged."""
        return self.model_dump(mode="json", by_alias=True)
