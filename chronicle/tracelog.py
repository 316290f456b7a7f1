"""The agents' traces for a terminal, read back from the Chronicle's ``trace`` events.

The runtime's JSONL files live in the sandboxes' homes and go with them at teardown; the
Chronicle keeps every record it ingested, so this view works on a finished realm too. A
line is ``[HH:MM:SS] <agent> <type> <summary>``: the summary is chosen per record type
(what a person looks for: the tool and its outcome, the model's finish and tokens, the
error), and ``full`` prints the whole record instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.utils import timezone

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.tail import CONTINUATION, one_line, readable_time

TOOL_TYPES = ("tool_call", "tool_result")


@dataclass(frozen=True)
class TraceQuery:
    agent: str | None = None
    grep: str | None = None
    tool: str | None = None
    last: int = 15
    full: bool = False


def _summary(kind: str, data: dict[str, Any]) -> str:
    if kind == "tool_call":
        return f"{data.get('name')}({data.get('arguments', '')})"
    if kind == "tool_result":
        error = f" [{data['error_kind']}]" if data.get("error_kind") else ""
        return (
            f"{data.get('name')} → {data.get('outcome')}{error}, "
            f"{data.get('size')} chars, {data.get('duration_ms')} ms"
        )
    if kind == "model_request":
        return (
            f"{data.get('messages')} messages, {data.get('tools')} tools, "
            f"~{data.get('estimated_tokens')} tokens"
        )
    if kind == "model_response":
        usage = data.get("usage") or {}
        calls = ", ".join(str(c.get("name")) for c in data.get("tool_calls") or [])
        return (
            f"finish={data.get('finish_reason')} tokens={usage.get('prompt_tokens')}"
            f"/{usage.get('completion_tokens')} {data.get('latency_ms')} ms"
            + (f" calls: {calls}" if calls else "")
        )
    if kind == "provider_error":
        return f"{data.get('status')} {data.get('kind')}: {data.get('error')}"
    if kind == "error":
        return f"{data.get('where')}: {data.get('error')}"
    return " ".join(f"{k}={_compact(v)}" for k, v in data.items())


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _record(payload: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    data = payload.get("data")
    return (
        str(payload.get("agent_id", "")),
        str(payload.get("type", "")),
        (data if isinstance(data, dict) else {"data": data}),
    )


def trace_lines(realm_id: str, query: TraceQuery, *, today: date | None = None) -> list[str]:
    """The last ``query.last`` trace records that match, oldest first."""
    day = today or timezone.localdate()
    rows = selectors.events(realm_id, Kind.TRACE)
    if query.agent:
        rows = rows.filter(payload__agent_id=query.agent)
    if query.tool:
        rows = rows.filter(payload__type__in=TOOL_TYPES, payload__data__name=query.tool)
    needle = (query.grep or "").casefold()
    picked: list[str] = []
    # Newest first, so -n stops the scan early on a long trace.
    for event in rows.order_by("-ts_ms", "-id").iterator():
        agent, kind, data = _record(event.payload)
        whole = json.dumps(data, ensure_ascii=False, default=str, indent=2)
        if needle and needle not in f"{agent} {kind} {whole}".casefold():
            continue
        head = f"[{readable_time(event.ts_ms, day)}] {agent} {kind}"
        if query.full:
            picked.append(f"{head}{CONTINUATION}" + CONTINUATION.join(whole.splitlines()))
        else:
            picked.append(f"{head} {one_line(_summary(kind, data))}")
        if len(picked) >= query.last:
            break
    return picked[::-1]


# What the runtime traces when something went wrong, and a ``turn_end`` that carries an
# error (a provider refusal ends the turn with the reason).
FAILURE_TYPES = ("provider_error", "error", "turn_end")


def _failure_text(payload: dict[str, Any], providers: dict[str, str]) -> str | None:
    agent, kind, data = _record(payload)
    on = f" (provider {providers[agent]!r})" if providers.get(agent) else ""
    if kind == "provider_error" or (
        kind == "turn_end" and data.get("termination") == "provider_error" and data.get("error")
    ):
        status = f"{data['status']} " if kind == "provider_error" and data.get("status") else ""
        return f"{agent}'s last model call failed{on}: {status}{data.get('error')}"
    if kind == "error":
        return f"{agent} failed in {data.get('where')}: {data.get('error')}"
    if kind == "turn_end" and data.get("error"):
        return f"{agent}'s turn ended ({data.get('termination')}): {data.get('error')}"
    return None


def latest_failure(realm_id: str) -> str | None:
    """One line on the newest failure the Chronicle shows: a model call or runtime error
    in an agent's trace, or a teardown step that failed."""
    traced = (
        selectors.events(realm_id, Kind.TRACE)
        .filter(payload__type__in=FAILURE_TYPES)
        .order_by("-ts_ms", "-id")
    )
    providers = {
        agent: str(key.get("provider") or "")
        for agent, key in selectors.minted_keys(realm_id).items()
    }
    found: tuple[int, str] | None = None
    for event in traced[:50]:  # turn ends without an error are skipped over
        text = _failure_text(event.payload, providers)
        if text is not None:
            found = (event.ts_ms, text)
            break
    teardown = selectors.lifecycle_events(realm_id, "teardown_error")
    if teardown and (found is None or teardown[-1].ts_ms >= found[0]):
        step = teardown[-1].payload
        found = (teardown[-1].ts_ms, f"teardown {step.get('step')} failed: {step.get('detail')}")
    return None if found is None else one_line(found[1], 200)
