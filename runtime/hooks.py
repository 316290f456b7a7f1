"""Typed in-process hooks: platform policy as code, never as a prompt.

* ``pre_model(request)`` may return a modified request body (or None to keep it);
* ``pre_tool(call)`` returns :class:`Allow`, :class:`Deny` or :class:`Modify`; an exception
  blocks the call (fail closed);
* ``post_tool(call, result)`` may return a replacement result;
* ``on_stop(final_text)`` may return a message that makes the loop continue.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from runtime.tools import ToolCall, ToolResult


@dataclass(frozen=True)
class Allow:
    pass


@dataclass(frozen=True)
class Deny:
    reason: str


@dataclass(frozen=True)
class Modify:
    arguments: dict[str, Any]


PreToolDecision = Allow | Deny | Modify
PreModelHook = Callable[[dict[str, Any]], dict[str, Any] | None]
PreToolHook = Callable[[ToolCall], PreToolDecision]
PostToolHook = Callable[[ToolCall, ToolResult], ToolResult | None]
OnStopHook = Callable[[str], str | None]


@dataclass
class Hooks:
    pre_model: list[PreModelHook] = field(default_factory=list)
    pre_tool: list[PreToolHook] = field(default_factory=list)
    post_tool: list[PostToolHook] = field(default_factory=list)
    on_stop: list[OnStopHook] = field(default_factory=list)
