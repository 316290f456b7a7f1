"""The agent's own view in the console: for one agent and one moment, exactly what its
model saw (the system prompt, the tools offered, the history as sent, compacted or
not) and what it answered, beside the transcript as it stood then.

Read through :func:`chronicle.agentview.agent_view`, as ``pit_trace --as`` and the API
read it; the moment is picked from the agent's own model calls (a slider and a list),
or given as ``at`` (an event id, a ms timestamp or an ISO time).
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from chronicle import selectors
from chronicle.agentview import AgentView, BadMoment, agent_view, parse_moment, tool_name
from chronicle.kinds import Kind
from realms.console import realm_page
from realms.console.access import operator_required

# The agent's newest calls the picker lists, and the transcript messages shown beside.
CALLS = 500
TRANSCRIPT = 60


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _message(message: dict[str, Any]) -> dict[str, Any]:
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(
                {"name": function.get("name"), "arguments": _arguments(function.get("arguments"))}
            )
    return {
        "role": str(message.get("role") or "?"),
        "text": _text(message.get("content")) if message.get("content") is not None else "",
        "tool_call_id": message.get("tool_call_id") or "",
        "tool_calls": calls,
    }


def _tool(tool: Any) -> dict[str, Any]:
    function = tool.get("function") if isinstance(tool, dict) else None
    about = function.get("description") if isinstance(function, dict) else None
    schema = function.get("parameters") if isinstance(function, dict) else tool
    return {"name": tool_name(tool), "description": about or "", "schema": _text(schema)}


def _reply(view: AgentView) -> dict[str, Any] | None:
    if view.reply is None:
        return None
    return {
        "text": _text(view.reply.get("content") or ""),
        "tool_calls": [
            {"name": c.get("name"), "arguments": _arguments(c.get("arguments"))}
            for c in view.reply.get("tool_calls") or []
            if isinstance(c, dict)
        ],
    }


def _calls(realm_id: str, agent: str) -> list[dict[str, Any]]:
    traced = selectors.events(realm_id, Kind.TRACE).filter(
        payload__agent_id=agent, payload__type="model_request"
    )
    rows = list(traced.order_by("-ts_ms", "-id").values_list("id", "ts_ms", "payload")[:CALLS])
    rows.reverse()
    return [
        {
            "event": pk,
            "clock": realm_page.clock(ts),
            "ts": ts,
            "turn": p.get("turn") if isinstance(p, dict) else None,
            "step": p.get("step") if isinstance(p, dict) else None,
        }
        for pk, ts, p in rows
    ]


def _transcript(
    realm_id: str, call_ms: int | None, until_ms: int | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The transcript before the call, and what was posted after it until the agent's
    next call (its own answer among it). A message reaches the Chronicle a moment after
    the agent reads it, so one shown just after the call may be one it saw."""
    before = None if until_ms is None else (until_ms, 0)
    rows = realm_page.message_window(realm_id, before)[-TRANSCRIPT:]
    items = realm_page.message_items(
        rows, realm_page.colours(realm_id), realm_page.channels(realm_id)
    )
    if call_ms is None:
        return items, []
    return [m for m in items if m["ts"] <= call_ms], [m for m in items if m["ts"] > call_ms]


def _response(view: AgentView) -> list[tuple[str, str]]:
    """The call's outcome as short facts: how it finished, its tokens, how long it took."""
    data = view.response or {}
    found = data.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    facts = [
        ("finish", data.get("finish_reason")),
        ("tokens in", usage.get("prompt_tokens")),
        ("tokens out", usage.get("completion_tokens")),
        ("latency", f"{data['latency_ms']} ms" if data.get("latency_ms") is not None else None),
        ("error", data.get("error") or data.get("message")),
    ]
    return [(name, str(value)) for name, value in facts if value not in (None, "")]


@operator_required
@require_GET
def view(request: HttpRequest, realm_id: str, agent: str) -> HttpResponse:
    context: dict[str, Any] = {"nav": "home", "realm_id": realm_id, "agent": agent}
    if not selectors.realm_known(realm_id):
        return render(request, "console/realm/unknown.html", context, status=404)
    roster = selectors.realm_plan(realm_id).roster
    context["roster"] = roster
    if agent not in roster:
        return render(request, "console/realm/agent_view_unknown.html", context, status=404)
    at = request.GET.get("at", "").strip()
    context.update(at=at, calls=_calls(realm_id, agent))
    moment = None
    if at:
        try:
            moment = parse_moment(realm_id, at[:64])
        except BadMoment as exc:
            transcript, _ = _transcript(realm_id, None, None)
            context.update(bad_at=str(exc), transcript=transcript)
            return render(request, "console/realm/agent_view.html", context, status=400)
    seen = agent_view(realm_id, agent, moment)
    calls = context["calls"]
    index = next(
        (i for i, c in enumerate(calls) if seen and c["event"] == seen.request_event), None
    )
    context.update(
        seen=seen,
        index=index,
        previous=calls[index - 1] if index else None,
        next=calls[index + 1] if index is not None and index + 1 < len(calls) else None,
        system=seen.system if seen else None,
        tools=[_tool(t) for t in seen.tools] if seen else [],
        history=[_message(m) for m in seen.history] if seen else [],
        reply=_reply(seen) if seen else None,
        clock=realm_page.clock(seen.ts_ms) if seen else "",
        facts=_response(seen) if seen else [],
    )
    call_ms = seen.ts_ms if seen else moment.ts_ms if moment else None
    later = context["next"]
    until = later["ts"] if later else None
    context["transcript"], context["after"] = _transcript(realm_id, call_ms, until)
    return render(request, "console/realm/agent_view.html", context)
