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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from runtime.record import Problems, Record, RecordError, constraint

_ENV_REF = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}")


@dataclass(kw_only=True)
class ModelSettings(Record):
    """Where the model is and how to call it."""

    base_url: str  # OpenAI-compatible base URL, e.g. http://gateway/v1
    socket_path: str | None = None  # Unix socket to reach base_url through (the gateway's)
    api_key: str = field(metadata=constraint(min_length=1))  # the agent's virtual key
    name: str = field(metadata=constraint(min_length=1))
    context_length: int = field(default=128_000, metadata=constraint(ge=1024))
    max_output_tokens: int = field(default=4096, metadata=constraint(ge=16))
    temperature: float | None = None
    tool_mode: Literal["native", "json", "auto"] = "native"
    request_timeout_s: float = field(default=300.0, metadata=constraint(gt=0))

    def _check(self) -> Problems:
        if not self.base_url.startswith(("http://", "https://")):
            return [("base_url", "should start with http:// or https://")]
        return []


@dataclass(kw_only=True)
class BusSettings(Record):
    """The agent's identity on the Matrix bus and the rooms it lives in."""

    homeserver_url: str = "http://homeserver"
    socket_path: str | None = None
    mxid: str = field(metadata=constraint(pattern=r"^@[^:]+:.+$"))
    access_token: str = field(metadata=constraint(min_length=1))
    commons_room_id: str = field(metadata=constraint(min_length=1))
    dm_rooms: dict[str, str] = field(default_factory=dict)  # peer agent id → room id
    system_mxid: str | None = None
    operator_mxid: str | None = None
    peers: dict[str, str] = field(default_factory=dict)  # agent id → mxid, to label senders
    require_mention: bool = True
    referee_sees_all: bool = False


@dataclass(kw_only=True)
class McpServerSettings(Record):
    """One MCP server reached over streamable HTTP (TCP or a Unix socket)."""

    name: str = field(metadata=constraint(pattern=r"^[A-Za-z0-9_-]{1,32}$"))
    url: str = "http://mcp/mcp"
    socket_path: str | None = None
    bearer_token: str | None = None
    call_timeout_s: float = field(default=120.0, metadata=constraint(gt=0))
    connect_timeout_s: float = field(default=60.0, metadata=constraint(gt=0))
    include: list[str] | None = None
    exclude: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class Limits(Record):
    """Per-wake limits and context budgets (defaults from the runtime spec's table)."""

    max_steps_per_turn: int = field(default=60, metadata=constraint(ge=1))
    max_wall_seconds_per_turn: float = field(default=900.0, metadata=constraint(gt=0))
    max_consecutive_errors: int = field(default=3, metadata=constraint(ge=1))
    provider_retries: int = field(default=2, metadata=constraint(ge=0))
    backoff_base_s: float = field(default=2.0, metadata=constraint(ge=0))
    gateway_wait_s: float = field(default=180.0, metadata=constraint(ge=0))
    tool_timeout_s: float = field(default=120.0, metadata=constraint(gt=0))
    max_tool_output_chars: int = field(default=24_000, metadata=constraint(ge=1000))
    tool_preview_chars: int = field(default=2000, metadata=constraint(ge=200))
    max_round_output_chars: int = field(default=48_000, metadata=constraint(ge=1000))
    compaction_trigger: float = field(default=0.75, metadata=constraint(gt=0.1, lt=1.0))
    tail_fraction: float = field(default=0.2, metadata=constraint(gt=0, lt=0.9))
    min_tail_messages: int = field(default=6, metadata=constraint(ge=1))
    summary_max_tokens: int = field(default=2000, metadata=constraint(ge=64))
    compaction_cooldown_rounds: int = field(default=2, metadata=constraint(ge=0))


@dataclass(kw_only=True)
class Skill(Record):
    name: str = field(metadata=constraint(min_length=1, max_length=100))
    text: str
    description: str = ""
    # An on-demand skill is only named (with its description) in the first prompt; the
    # agent reads its text with load_skill(name).
    on_demand: bool = False


@dataclass(kw_only=True)
class RosterEntry(Record):
    id: str
    name: str | None = None
    role: Literal["participant", "referee"] = "participant"
    description: str | None = None


@dataclass(kw_only=True)
class PromptInputs(Record):
    """What the birth system prompt is rendered from (see runtime/prompts: system_text)."""

    agent_id: str
    display_name: str | None = None
    mxid: str
    role: Literal["participant", "referee"] = "participant"
    persona: str = ""
    rubric: str | None = None
    roster: list[RosterEntry] = field(default_factory=list)
    commons_room: str = "Commons"
    dm_peers: list[str] = field(default_factory=list)
    require_mention: bool = True
    sees_all: bool = False
    realm_goals: list[str] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)
    responsibilities: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    resources_dir: str = "~/resources"
    shared_folder: str | None = None
    guidelines: str | None = None
    restrictions: str | None = None
    budget_note: str | None = None
    realmtools: bool = True


@dataclass(kw_only=True)
class TimerSettings(Record):
    """A periodic wake: every ``every_s`` seconds the agent is woken with ``message``."""

    every_s: float = field(metadata=constraint(gt=0))
    message: str = field(metadata=constraint(min_length=1))


@dataclass(kw_only=True)
class BirthConfig(Record):
    """The whole birth config of one agent's runtime."""

    version: Literal[1] = 1
    run_id: str = field(metadata=constraint(min_length=1))
    agent_id: str = field(metadata=constraint(pattern=r"^[a-z0-9][a-z0-9-]{0,63}$"))
    model: ModelSettings
    bus: BusSettings | None = None
    mcp_servers: list[McpServerSettings] = field(default_factory=list)
    # Tool names the model may see and call; None = every MCP tool, no built-ins.
    tools_allow: list[str] | None = None
    limits: Limits = field(default_factory=Limits)
    skills: list[Skill] = field(default_factory=list)
    prompt: PromptInputs | None = None
    system_prompt: str | None = None  # a pre-rendered system prompt
    timers: list[TimerSettings] = field(default_factory=list)
    workspace: str  # the agent's home; built-in file tools stay inside it
    state_dir: str
    trace_path: str
    transcript_path: str

    def _check(self) -> Problems:
        problems: Problems = []
        if (self.prompt is None) == (self.system_prompt is None):
            problems.append(
                ("prompt", "give exactly one of prompt (inputs) and system_prompt (rendered)")
            )
        names = [s.name for s in self.mcp_servers]
        if len(names) != len(set(names)):
            problems.append(("mcp_servers", "names must be unique"))
        return problems

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
    except RecordError as exc:
        lines = [f"{path}: {where or '(top level)'}: {what}" for where, what in exc.problems]
        raise BirthError("\n".join(lines)) from None
