"""Keeping the history inside the window: capped tool outputs and compaction.

Compaction keeps the system prompt, the first task message, the latest inbound message and a
tail of whole assistant→tool groups, and puts a summary where the middle was. The summary comes
from the same endpoint; when that fails a deterministic digest takes its place, so messages are
never dropped with nothing in their place.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.birth import Limits
from runtime.prompts import summary_request

Message = dict[str, Any]
SUMMARY_OPEN = "<summary of earlier conversation>"


def estimate_tokens(messages: list[Message]) -> int:
    """A chars/4 estimate; the provider's ``usage`` is the truth when we have it."""
    return sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) // 4 + 1


def cap_output(
    text: str, call_id: str, cap: int, preview_chars: int, spill_dir: Path
) -> tuple[str, Path | None]:
    """Keep ``text`` if it fits ``cap``; otherwise spill it and return a head/tail preview."""
    if len(text) <= cap:
        return text, None
    digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
    safe_id = "".join(ch if ch.isalnum() or ch in "_-" else "_" for ch in call_id)[:64]
    spill_dir.mkdir(parents=True, exist_ok=True)
    path = spill_dir / f"{safe_id}_{digest}.txt"
    path.write_text(text, encoding="utf-8")
    half = preview_chars // 2
    preview = (
        f"{text[:half]}\n\n[... {len(text) - 2 * half} chars omitted; the full output "
        f"({len(text)} chars) is saved at {path} ...]\n\n{text[-half:]}"
    )
    return preview, path


@dataclass
class CompactionResult:
    messages: list[Message]
    summarised: int
    summary_ok: bool
    before_tokens: int
    after_tokens: int


Summariser = Callable[[str], Awaitable[str]]


def _head_end(messages: list[Message]) -> int:
    """Index after the kept head: the system prompt and the first task message."""
    end = 1 if messages and messages[0]["role"] == "system" else 0
    if len(messages) > end and messages[end]["role"] == "user":
        end += 1
    return end


def _tail_start(messages: list[Message], head: int, budget: int, min_messages: int) -> int:
    start, used = len(messages), 0
    while start > head:
        candidate = start - 1
        # Never split a group: a tool result travels with the assistant message that asked.
        while candidate > head and messages[candidate]["role"] == "tool":
            candidate -= 1
        if messages[candidate]["role"] == "tool":
            break
        cost = estimate_tokens(messages[candidate:start])
        if used + cost > budget and len(messages) - start >= min_messages:
            break
        start, used = candidate, used + cost
    return start


def _render_middle(messages: list[Message], max_chars: int) -> str:
    parts: list[str] = []
    for msg in messages:
        text = str(msg.get("content") or "")
        if len(text) > 2000:
            text = text[:1000] + " [...] " + text[-800:]
        line = f"[{msg['role']}] {text}"
        for call in msg.get("tool_calls") or []:
            fn = call["function"]
            line += f"\n  -> called {fn['name']}({fn['arguments'][:300]})"
        parts.append(line)
    joined = "\n".join(parts)
    if len(joined) > max_chars:
        joined = joined[: max_chars // 3] + "\n[...]\n" + joined[-(2 * max_chars) // 3 :]
    return joined


def fallback_summary(middle: list[Message]) -> str:
    """A digest built without a model: the tool calls made, files touched, the last words."""
    calls: list[str] = []
    files: list[str] = []
    for msg in middle:
        for call in msg.get("tool_calls") or []:
            fn = call["function"]
            calls.append(f"{fn['name']}({fn['arguments'][:120]})")
            try:
                args = json.loads(fn["arguments"] or "{}")
            except json.JSONDecodeError:
                args = {}
            if isinstance(args, dict):
                files.extend(str(args[k]) for k in ("path", "file") if k in args)
    said = [m for m in middle if m["role"] in ("user", "assistant") and m.get("content")]
    lines = ["(automatic digest; no model summary was available)"]
    lines.append("Tool calls made: " + ("; ".join(calls[-40:]) if calls else "none"))
    if files:
        lines.append("Files touched: " + ", ".join(dict.fromkeys(files)))
    for msg in said[-4:]:
        lines.append(f"Last {msg['role']} message: {str(msg['content'])[:600]}")
    return "\n".join(lines)


class Compactor:
    def __init__(self, limits: Limits, context_length: int, summarise: Summariser) -> None:
        self._limits = limits
        self._context_length = context_length
        self._summarise = summarise
        self._cooldown = 0
        self._fruitless = 0

    @property
    def threshold(self) -> int:
        return int(self._limits.compaction_trigger * self._context_length)

    def due(self, estimated_tokens: int) -> bool:
        """Proactive trigger, with a cooldown so a stubborn estimate cannot loop."""
        if self._cooldown > 0:
            self._cooldown -= 1
            return False
        return estimated_tokens >= self.threshold

    async def compact(self, messages: list[Message]) -> CompactionResult | None:
        """Return the compacted history, or None when there is nothing in the middle."""
        before = estimate_tokens(messages)
        head = _head_end(messages)
        budget = int(self._limits.tail_fraction * self._context_length)
        start = _tail_start(messages, head, budget, self._limits.min_tail_messages)
        if start <= head:
            return None
        middle = messages[head:start]
        pinned: list[Message] = []
        last_user = max(
            (i for i, m in enumerate(messages) if m["role"] == "user" and i >= head), default=None
        )
        if last_user is not None and last_user < start:
            pinned = [messages[last_user]]
            middle = [m for i, m in enumerate(middle, head) if i != last_user]
        summary_ok = False
        summary = ""
        if self._fruitless < self._limits.compaction_cooldown_rounds:
            try:
                text = _render_middle(middle, max_chars=self._context_length * 2)
                summary = (await self._summarise(summary_request(transcript=text))).strip()
                summary_ok = bool(summary)
            except Exception:  # any failure of the summary call falls back to the digest
                summary_ok = False
        if not summary_ok:
            summary = fallback_summary(middle)
        summary_msg: Message = {
            "role": "user",
            "content": f"{SUMMARY_OPEN}\n{summary}\n</summary of earlier conversation>",
        }
        compacted = [*messages[:head], summary_msg, *pinned, *messages[start:]]
        after = estimate_tokens(compacted)
        self._cooldown = self._limits.compaction_cooldown_rounds
        self._fruitless = self._fruitless + 1 if after >= self.threshold else 0
        return CompactionResult(compacted, len(middle), summary_ok, before, after)
