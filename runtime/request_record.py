"""What the trace keeps of a model request: the agent's own view of one call.

``model_request`` records carry the request as sent (after the pre-model hooks): the
history as it stood, compacted or not, and, whenever they differ from this run's previous
request, the system prompt and the tools offered. Everything is bounded so one record stays
well under the line limit the platform ingests (the secrets are masked when the line is
written, like every other trace line). The newest messages are kept whole first; what did
not fit is counted, never silently lost.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

SYSTEM_BYTES = 32_000
TOOLS_BYTES = 32_000
HISTORY_BYTES = 64_000
MESSAGE_CHARS = 4_000
REPLY_CHARS = 4_000
CUT = "… [cut: {n} more characters]"


def _size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, default=str).encode())


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + CUT.format(n=len(text) - limit)


def _clip_bytes(text: str, limit: int) -> str:
    keep = limit
    while len(text[:keep].encode()) > limit:  # a character takes up to four bytes
        keep = keep * 3 // 4
    return clip(text, keep)


def _message(message: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {}
    for key, value in message.items():
        if key == "content" and isinstance(value, str):
            kept[key] = clip(value, MESSAGE_CHARS)
        elif key == "tool_calls" and isinstance(value, list):
            kept[key] = [_call(c) for c in value]
        else:
            kept[key] = value
    return kept


def _call(call: Any) -> Any:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        return call
    function = dict(call["function"])
    if isinstance(function.get("arguments"), str):
        function["arguments"] = clip(function["arguments"], MESSAGE_CHARS)
    return {**call, "function": function}


def _history(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The newest messages that fit in ``HISTORY_BYTES``, oldest first; how many did not."""
    kept: list[dict[str, Any]] = []
    used = 0
    for message in reversed(messages):
        item = _message(message)
        size = _size(item)
        if used + size > HISTORY_BYTES:
            break
        kept.append(item)
        used += size
    return kept[::-1], len(messages) - len(kept)


def _tools(tools: list[dict[str, Any]]) -> tuple[list[Any], int]:
    """Each offered tool's schema while they fit; the rest by name only."""
    kept: list[Any] = []
    used = 0
    clipped = 0
    for tool in tools:
        size = _size(tool)
        if used + size <= TOOLS_BYTES:
            kept.append(tool)
            used += size
            continue
        name = tool.get("function", {}).get("name") if isinstance(tool, dict) else None
        kept.append({"name": name, "schema": "not kept: the tool list is over its size bound"})
        clipped += 1
    return kept, clipped


class RequestRecorder:
    """Builds the ``request`` part of each ``model_request`` record of one runtime run."""

    def __init__(self) -> None:
        self._last_digest: str | None = None

    def record(self, body: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        system = ""
        if messages and messages[0].get("role") == "system":
            system = str(messages[0].get("content") or "")
            messages = messages[1:]
        sent = body.get("tools")
        offered: list[dict[str, Any]] = sent if isinstance(sent, list) else tools
        digest = hashlib.sha256(
            json.dumps([system, offered], sort_keys=True, default=str).encode()
        ).hexdigest()[:16]
        history, omitted = _history(messages)
        request: dict[str, Any] = {
            "context_digest": digest,
            "history": history,
            "history_omitted": omitted,
        }
        if digest != self._last_digest:
            kept, clipped = _tools(offered)
            request["system"] = _clip_bytes(system, SYSTEM_BYTES)
            request["tools"] = kept
            request["tools_clipped"] = clipped
            self._last_digest = digest
        return request


def reply_record(content: str, calls: list[Any]) -> dict[str, Any]:
    """What the model answered: its text and each tool call with its arguments, bounded."""
    return {
        "content": clip(content, REPLY_CHARS),
        "tool_calls": [
            {"id": c.id, "name": c.name, "arguments": clip(c.arguments_json, MESSAGE_CHARS)}
            for c in calls
        ],
    }
