"""``agents/<id>/agent.json``: one agent of the roster."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from realms.packages.schema.common import (
    AGENT_ID_PATTERN,
    COLOR_PATTERN,
    Duration,
    GoalList,
    LongText,
    ShortText,
    Strict,
    ToolName,
)
from realms.skills import builtin as builtin_skills

ON_EXHAUSTED = ("starve", "starve_then_kill", "kill")
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")
# The names of the skills shipped in realms/skills/builtin/.
BUILTIN_SKILLS = builtin_skills.names()
# Prefixes of real provider credentials; a key handle never looks like one.
SECRET_PREFIXES = ("sk-", "sk_", "akia", "asia", "agpa", "ghp_", "gho_", "xoxb-", "aiza")


def looks_like_secret(value: str) -> bool:
    """True when a key *handle* has the shape of a real credential."""
    if value.lower().startswith(SECRET_PREFIXES):
        return True
    if any(ch.isspace() for ch in value):
        return False
    stripped = value.replace("-", "").replace("_", "")
    hexish = len(stripped) >= 24 and all(ch in "0123456789abcdefABCDEF" for ch in stripped)
    return len(value) >= 40 or hexish


class ModelRef(Strict):
    """An exact model for one agent, overriding its tier."""

    provider: str = Field(min_length=1, max_length=60, description="Provider name.")
    model: str = Field(min_length=1, max_length=120, description="Model or deployment id.")
    api_key_ref: str = Field(
        min_length=1,
        max_length=120,
        description="A key-store handle such as 'anthropic-main', never a key itself.",
    )
    input_cost_per_token: float | None = Field(default=None, ge=0, le=1)
    output_cost_per_token: float | None = Field(default=None, ge=0, le=1)
    context_length: int | None = Field(default=None, ge=1, le=100_000_000)
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


class Budget(Strict):
    """Spend cap for one agent and what happens when it runs out."""

    max_usd: float | None = Field(default=None, ge=0, le=1_000_000)
    max_tokens: int | None = Field(default=None, ge=0, le=10_000_000_000)
    on_exhausted: Literal["starve", "starve_then_kill", "kill"] = "starve"
    grace_period: Duration | None = Field(
        default=None, description="How long starve_then_kill waits before stopping the agent."
    )

    @property
    def capped(self) -> bool:
        return self.max_usd is not None or self.max_tokens is not None


class SkillRef(Strict):
    """A skill to seed: a built-in skill, a local ``skills/<ref>/SKILL.md``, or one of the
    operator's own skills in the skills library (``user``)."""

    source: Literal["builtin", "local", "user", "gh"]
    ref: str = Field(min_length=1, max_length=200)


class PrivateMessaging(Strict):
    """Whether an agent may send private messages, and to whom."""

    enabled: bool = False
    include_referee: bool = False
    peers: list[ShortText] = Field(default_factory=list, max_length=50)
    max_per_round: int = Field(default=0, ge=0, le=100)


class RefereePowers(Strict):
    """Referee-only powers."""

    read_dms: bool = False
    inspect_private_fs: Literal["none", "read_only"] = "none"
    verdict_ends_realm: bool = False


class AgentManifest(Strict):
    """What an author writes in ``agent.json``."""

    id: str = Field(min_length=1, max_length=64, pattern=AGENT_ID_PATTERN)
    name: str | None = Field(default=None, max_length=100)
    description: str | None = Field(default=None, max_length=500)
    color: str | None = Field(default=None, pattern=COLOR_PATTERN)
    role: Literal["participant", "referee"] = "participant"
    model_category: Literal["small", "medium", "large"] = "medium"
    model: ModelRef | None = None
    budget: Budget = Field(default_factory=Budget)
    tools: list[ToolName] = Field(default_factory=list, max_length=50)
    skills: list[SkillRef] = Field(default_factory=list, max_length=50)
    skills_mode: Literal["inline", "on_demand"] = Field(
        default="inline",
        description="inline: every skill's text is in the first prompt; on_demand: only "
        "names and descriptions, and the agent reads a skill with load_skill(name).",
    )
    memory: Literal["ephemeral", "persistent"] = "ephemeral"
    private_messaging: PrivateMessaging = Field(default_factory=PrivateMessaging)
    goals: GoalList = Field(default_factory=list)
    responsibilities: GoalList = Field(default_factory=list)
    persona: LongText | None = None
    resources: list[ShortText] = Field(
        default_factory=list,
        max_length=200,
        description="Filled by the loader from the agent's resources/ folder.",
    )
    rubric: LongText | None = Field(default=None, description="Referee only.")
    powers: RefereePowers | None = Field(default=None, description="Referee only.")

    @property
    def is_referee(self) -> bool:
        return self.role == "referee"


class Agent(AgentManifest):
    """An agent as loaded: the manifest plus its persona, resource files and skill texts."""

    resource_files: dict[str, str] = Field(
        default_factory=dict,
        description="Path → text of every resource this agent receives (project resources "
        "included; the agent's own file wins a name clash).",
    )
    local_skills: dict[str, str] = Field(
        default_factory=dict, description="Skill ref → SKILL.md text of its local skills."
    )
