"""The scripted provider: a deterministic model that answers from a per-agent YAML script.

See docs/scripted-provider.md for the format. This module is pure: it parses scripts and
picks replies; the gateway meters and serves them.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from jinja2 import ChainableUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ledger.tokens import content_text, count_text, truncate_text


class ScriptError(ValueError):
    """A script that cannot be parsed or rendered; the message says where."""


class ToolCallSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class StepSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    match: str | None = None
    regex: str | None = None
    text: str = ""
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {exc}") from exc
        return value


class ScriptSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[StepSpec] = Field(default_factory=list)
    idle: str = ""
    loop: bool = False


@functools.lru_cache(maxsize=256)
def parse_script(text: str) -> ScriptSpec:
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        raise ScriptError(f"script: not valid YAML: {exc}") from exc
    if isinstance(data, list):
        data = {"steps": data}
    if not isinstance(data, dict):
        raise ScriptError("script: expected a mapping with 'steps' (or a list of steps)")
    try:
        return ScriptSpec.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ScriptError(f"script: {where}: {first['msg']}") from exc


@dataclass(frozen=True)
class ScriptedReply:
    text: str
    tool_calls: list[dict[str, Any]]
    finish_reason: str
    cursor: int
    completion_tokens: int


_env = SandboxedEnvironment(undefined=ChainableUndefined, autoescape=False)


def _latest(messages: Sequence[Mapping[str, Any]], roles: tuple[str, ...]) -> str:
    for msg in reversed(messages):
        if msg.get("role") in roles:
            return content_text(msg.get("content"))
    return ""


def _render(value: Any, context: Mapping[str, Any], where: str) -> Any:
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        try:
            return _env.from_string(value).render(context)
        except TemplateError as exc:
            raise ScriptError(f"script: {where}: {exc}") from exc
    if isinstance(value, dict):
        return {k: _render(v, context, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_render(v, context, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _matches(step: StepSpec, incoming: str) -> bool:
    if step.match is not None and step.match.lower() not in incoming.lower():
        return False
    return step.regex is None or re.search(step.regex, incoming) is not None


def next_reply(
    script: ScriptSpec,
    cursor: int,
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int,
    variables: Mapping[str, Any] | None = None,
) -> ScriptedReply:
    """The reply for this call and the cursor after it.

    The step at the cursor answers if its ``match``/``regex`` accepts the latest incoming
    (user or tool) message; otherwise the idle reply answers and the cursor stays, so a
    step waits for its cue.
    """
    steps = script.steps
    index = cursor % len(steps) if (script.loop and steps) else cursor
    incoming = _latest(messages, ("user", "tool"))
    last_tool = _latest(messages, ("tool",))
    try:
        tool_json = json.loads(last_tool) if last_tool else None
    except ValueError:
        tool_json = None
    context = {
        "last_message": _latest(messages, ("user",)),
        "last_tool_result": last_tool,
        "tool_json": tool_json,
        "incoming": incoming,
        "step": index,
        **(variables or {}),
    }
    if index >= len(steps) or not _matches(steps[index], incoming):
        text = str(_render(script.idle, context, "idle"))
        calls: list[dict[str, Any]] = []
        new_cursor = cursor
    else:
        step = steps[index]
        text = str(_render(step.text, context, f"steps[{index}].text"))
        calls = []
        for i, spec in enumerate(step.tool_calls):
            args = _render(spec.arguments, context, f"steps[{index}].tool_calls[{i}].arguments")
            calls.append(
                {
                    "id": f"call_{cursor}_{i}",
                    "type": "function",
                    "function": {
                        "name": spec.name,
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        new_cursor = cursor + 1
    tokens = count_text(text) + sum(
        count_text(c["function"]["name"]) + count_text(c["function"]["arguments"]) for c in calls
    )
    finish = "tool_calls" if calls else "stop"
    if tokens > max_tokens:
        # Like a real model cut off by max_tokens: the text is truncated, tool calls with
        # half-written arguments are dropped.
        text = truncate_text(text, max_tokens)
        calls = []
        tokens = min(count_text(text), max_tokens)
        finish = "length"
    return ScriptedReply(text, calls, finish, new_cursor, tokens)
