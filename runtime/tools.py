"""The tool registry: definitions, argument validation, the allowlist, timeouts, results.

A tool's mistake-shaped failures (bad arguments, unknown tool, a handler error) come back as a
structured :class:`ToolResult` that the loop hands to the model; nothing here raises for them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

ToolHandler = Callable[[dict[str, Any]], Awaitable[str]]


class Outcome(StrEnum):
    SUCCESS = "success"
    ERROR = "error"
    BLOCKED = "blocked"


@dataclass(frozen=True)
class ToolResult:
    output: str
    outcome: Outcome = Outcome.SUCCESS
    error_kind: str | None = None

    @classmethod
    def error(cls, kind: str, message: str) -> ToolResult:
        return cls(output=f"Error: {message}", outcome=Outcome.ERROR, error_kind=kind)

    @classmethod
    def blocked(cls, kind: str, message: str) -> ToolResult:
        return cls(output=f"Blocked: {message}", outcome=Outcome.BLOCKED, error_kind=kind)


class ToolFailure(Exception):
    """Raised by a handler for an expected failure the model should read (not a bug)."""

    def __init__(self, message: str, kind: str = "tool_error") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    description: str
    parameters: dict[str, Any]
    handler: ToolHandler
    timeout_s: float | None = None
    source: str = "builtin"

    def as_openai_tool(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass
class ToolCall:
    id: str
    name: str
    arguments_json: str
    arguments: dict[str, Any] = field(default_factory=dict)


def object_schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a call's argument JSON; an empty string means no arguments."""
    if not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def schema_errors(schema: dict[str, Any], arguments: dict[str, Any], limit: int = 8) -> list[str]:
    """Every schema violation, briefly, with the argument path it concerns."""
    from runtime.schema import errors

    violations = errors(schema, arguments)
    if violations is None:
        # A schema beyond what runtime.schema covers. Imported only then: it is large.
        from jsonschema import Draft202012Validator

        validator = Draft202012Validator(schema)
        violations = [(tuple(e.path), e.message) for e in validator.iter_errors(arguments)]
    found: list[str] = []
    for path, message in sorted(violations, key=lambda v: list(v[0])):
        where = ".".join(str(p) for p in path) or "(arguments)"
        found.append(f"{where}: {message}")
    if len(found) > limit:
        found = [*found[:limit], f"... and {len(found) - limit} more"]
    return found


class ToolRegistry:
    """Tools by exposed name, filtered by the allowlist both when listed and when called."""

    def __init__(self, allow: list[str] | None, default_timeout_s: float) -> None:
        self._allow = None if allow is None else set(allow)
        self._default_timeout_s = default_timeout_s
        self._builtin: dict[str, ToolDefinition] = {}
        self._dynamic: dict[str, dict[str, ToolDefinition]] = {}

    def add_builtin(self, tool: ToolDefinition) -> None:
        if tool.name in self._builtin:
            raise ValueError(f"duplicate built-in tool {tool.name}")
        self._builtin[tool.name] = tool

    def builtin_names(self) -> list[str]:
        return list(self._builtin)

    def replace_source(self, source: str, tools: list[ToolDefinition]) -> None:
        """Swap in the full tool list of one dynamic source (an MCP server) at once."""
        self._dynamic[source] = {t.name: t for t in tools}

    def _allowed(self, tool: ToolDefinition) -> bool:
        if self._allow is None:
            # Without an explicit allowlist only platform (MCP) tools are offered.
            return tool.source != "builtin"
        return tool.name in self._allow

    def _all(self) -> dict[str, ToolDefinition]:
        merged: dict[str, ToolDefinition] = {}
        for tools in self._dynamic.values():
            merged.update(tools)
        merged.update(self._builtin)
        return merged

    def listed(self) -> list[ToolDefinition]:
        return sorted((t for t in self._all().values() if self._allowed(t)), key=lambda t: t.name)

    def schemas(self) -> list[dict[str, Any]]:
        return [t.as_openai_tool() for t in self.listed()]

    def names(self) -> list[str]:
        return [t.name for t in self.listed()]

    async def dispatch(self, call: ToolCall) -> ToolResult:
        tool = self._all().get(call.name)
        if tool is None or not self._allowed(tool):
            known = ", ".join(self.names()) or "none"
            return ToolResult.error("unknown_tool", f"no tool named {call.name!r} (tools: {known})")
        problems = schema_errors(tool.parameters, call.arguments)
        if problems:
            return ToolResult.error(
                "invalid_arguments",
                f"invalid arguments for {call.name}: " + "; ".join(problems),
            )
        timeout = tool.timeout_s or self._default_timeout_s
        try:
            output = await asyncio.wait_for(tool.handler(call.arguments), timeout)
        except TimeoutError:
            return ToolResult.error("timeout", f"{call.name} did not finish within {timeout:g}s")
        except ToolFailure as exc:
            return ToolResult.error(exc.kind, str(exc))
        except Exception as exc:  # a failing tool must not end the agent's turn
            return ToolResult.error("handler_exception", f"{type(exc).__name__}: {exc}")
        return ToolResult(output=output if output else "(no output)")
