"""The birth config: everything an agent's runtime is told once, at start.

The platform writes it (``BirthConfig(...).model_dump_json()``) into the agent's home as
``.bearpit/birth.json``; the runtime reads it with :func:`load_birth`. It carries secrets (the
virtual key, the bus token, MCP bearer tokens), so it lives only in that file and in memory.
This module imports nothing from Django, so the host side may import it freely.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

_ENV_REF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSettings(_Strict):
    """Where the model is and how to call it."""

    base_url: str = Field(description="OpenAI-compatible base URL, e.g. http://gateway/v1")
    socket_path: str | None = Field(
        default=None, description="Unix socket to reach base_url through (the gateway socket)"
    )
    api_key: str = Field(min_length=1, description="the agent's virtual key")
    name: str = Field(min_length=1)
    context_length: int = Field(default=128_000, ge=1024)
    max_output_tokens: int = Field(default=4096, ge=16)
    temperature: float | None = None
    tool_mode: Literal["native", "json"] = "native"
    request_timeout_s: float = Field(default=300.0, gt=0)

    @model_validator(mode="after")
    def _check_url(self) -> ModelSettings:
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must start with http:// or https://")
        return self


class BusSettings(_Strict):
    """The agent's identity on the Matrix bus and the rooms it lives in."""

    homeserver_url: str = "http://homeserver"
    socket_path: str | None = None
    mxid: str = Field(pattern=r"^@[^:]+:.+$")
    access_token: str = Field(min_length=1)
    commons_room_id: str = Field(min_length=1)
    dm_rooms: dict[str, str] = Field(default_factory=dict, description="peer agent id → room id")
    system_mxid: str | None = None
    operator_mxid: str | None = None
    peers: dict[str, str] = Field(
        default_factory=dict, description="agent id → mxid, to label senders"
    )
    require_mention: bool = True
    referee_sees_all: bool = False


class McpServerSettings(_Strict):
    """One MCP server reached over streamable HTTP (TCP or a Unix socket)."""

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$")
    url: str = "http://mcp/mcp"
    socket_path: str | None = None
    bearer_token: str | None = None
    call_timeout_s: float = Field(default=120.0, gt=0)
    connect_timeout_s: float = Field(default=60.0, gt=0)
    include: list[str] | None = None
    exclude: list[str] = Field(default_factory=list)


class Limits(_Strict):
    """Per-wake limits and context budgets (defaults from the runtime spec's table)."""

    max_steps_per_turn: int = Field(default=60, ge=1)
    max_wall_seconds_per_turn: float = Field(default=900.0, gt=0)
    max_consecutive_errors: int = Field(default=3, ge=1)
    provider_retries: int = Field(default=2, ge=0)
    backoff_base_s: float = Field(default=2.0, ge=0)
    tool_timeout_s: float = Field(default=120.0, gt=0)
    max_tool_output_chars: int = Field(default=24_000, ge=1000)
    tool_preview_chars: int = Field(default=2000, ge=200)
    max_round_output_chars: int = Field(default=48_000, ge=1000)
    compaction_trigger: float = Field(default=0.75, gt=0.1, lt=1.0)
    tail_fraction: float = Field(default=0.2, gt=0, lt=0.9)
    min_tail_messages: int = Field(default=6, ge=1)
    summary_max_tokens: int = Field(default=2000, ge=64)
    compaction_cooldown_rounds: int = Field(default=2, ge=0)


class Skill(_Strict):
    name: str = Field(min_length=1, max_length=100)
    text: str


class RosterEntry(_Strict):
    id: str
    name: str | None = None
    role: Literal["participant", "referee"] = "participant"
    description: str | None = None


class PromptInputs(_Strict):
    """What the birth system prompt is rendered from (see runtime/prompts/system.md.j2)."""

    agent_id: str
    display_name: str | None = None
    mxid: str
    role: Literal["participant", "referee"] = "participant"
    persona: str = ""
    rubric: str | None = None
    roster: list[RosterEntry] = Field(default_factory=list)
    commons_room: str = "Commons"
    dm_peers: list[str] = Field(default_factory=list)
    require_mention: bool = True
    sees_all: bool = False
    realm_goals: list[str] = Field(default_factory=list)
    goals: list[str] = Field(default_factory=list)
    responsibilities: list[str] = Field(default_factory=list)
    resources: list[str] = Field(default_factory=list)
    resources_dir: str = "~/resources"
    shared_folder: str | None = None
    guidelines: str | None = None
    restrictions: str | None = None
    budget_note: str | None = None
    realmtools: bool = True


class TimerSettings(_Strict):
    """A periodic wake: every ``every_s`` seconds the agent is woken with ``message``."""

    every_s: float = Field(gt=0)
    message: str = Field(min_length=1)


class BirthConfig(_Strict):
    """The whole birth config of one agent's runtime."""

    version: Literal[1] = 1
    run_id: str = Field(min_length=1)
    agent_id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    model: ModelSettings
    bus: BusSettings | None = None
    mcp_servers: list[McpServerSettings] = Field(default_factory=list)
    tools_allow: list[str] | None = Field(
        default=None,
        description="tool names the model may see and call; None = every MCP tool, no built-ins",
    )
    limits: Limits = Field(default_factory=Limits)
    skills: list[Skill] = Field(default_factory=list)
    prompt: PromptInputs | None = None
    system_prompt: str | None = Field(default=None, description="a pre-rendered system prompt")
    timers: list[TimerSettings] = Field(default_factory=list)
    workspace: str = Field(description="the agent's home; built-in file tools stay inside it")
    state_dir: str
    trace_path: str
    transcript_path: str

    @model_validator(mode="after")
    def _one_prompt_source(self) -> BirthConfig:
        if (self.prompt is None) == (self.system_prompt is None):
            raise ValueError("give exactly one of prompt (inputs) and system_prompt (rendered)")
        names = [s.name for s in self.mcp_servers]
        if len(names) != len(set(names)):
            raise ValueError("mcp_servers: names must be unique")
        return self

    def secrets(self) -> list[str]:
        """Every secret string this config holds, for the trace redactor."""
        found = [self.model.api_key]
        if self.bus is not None:
            found.append(self.bus.access_token)
        found.extend(s.bearer_token for s in self.mcp_servers if s.bearer_token)
        return [s for s in found if s]


class BirthError(Exception):
    """The birth config is missing or wrong; the message says where."""


def _expand_env(value: object) -> object:
    """Expand ``${VAR}`` references in strings so tokens may come from the environment."""
    if isinstance(value, str):

        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in os.environ:
                raise BirthError(f"environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, list):
        return [_expand_env(v) for v in value]
    if isinstance(value, dict):
        return {k: _expand_env(v) for k, v in value.items()}
    return value


def load_birth(path: Path) -> BirthConfig:
    """Read and validate a birth config file; raise BirthError with located messages."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BirthError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BirthError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise BirthError(f"{path}: not JSON: {where}: {exc.msg}") from None
    try:
        return BirthConfig.model_validate(_expand_env(raw))
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            lines.append(f"{path}: {where}: {err['msg']}")
        raise BirthError("\n".join(lines)) from None
