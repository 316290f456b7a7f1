"""Resuming after a restart: rebuild the conversation from the transcript.

The transcript holds every message that entered the history, plus a checkpoint (the whole
history) at each compaction and each resume. Replaying it gives the history as it was when
the process stopped. A tool call whose result was never recorded (the process died during
the call) gets a result saying so, so the history stays valid and the model knows the
effect is unknown rather than replaying it blindly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Message = dict[str, Any]
CHECKPOINT_KINDS = ("compaction", "resume")
INTERRUPTED = (
    "Interrupted: the runtime restarted before this call returned; whether it took effect "
    "is unknown. Check before repeating it."
)


def replay(path: Path) -> list[Message]:
    """The history recorded in a transcript file (empty if there is none)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    history: list[Message] = []
    for line in lines:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short when the process died
        if not isinstance(record, dict):
            continue
        if record.get("kind") == "message" and isinstance(record.get("message"), dict):
            history.append(record["message"])
        elif record.get("kind") in CHECKPOINT_KINDS and isinstance(record.get("history"), list):
            history = [m for m in record["history"] if isinstance(m, dict)]
    return history


def repair(history: list[Message]) -> list[Message]:
    """Give every tool call exactly one result, adding an 'interrupted' one where missing."""
    out: list[Message] = []
    index = 0
    while index < len(history):
        message = history[index]
        out.append(message)
        index += 1
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if not calls:
            continue
        answered: set[str] = set()
        while index < len(history) and history[index].get("role") == "tool":
            answered.add(str(history[index].get("tool_call_id")))
            out.append(history[index])
            index += 1
        for call in calls:
            if str(call.get("id")) not in answered:
                out.append({"role": "tool", "tool_call_id": call.get("id"), "content": INTERRUPTED})
    return out
