"""The agent's own view: exactly what its model saw at one moment, and what it answered.

Read from the agent's ``trace`` events: the last ``model_request`` at or before the moment
(its history as sent, compacted or not) with the system prompt and tools offered, which
the runtime records with the first request of a run and again whenever they change, and
the ``model_response`` that answered it. The runtime masked the secrets before it wrote
the lines; this module only reads them back.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.tail import one_line

# A bare number this large is a time in ms (2001 onwards); below it, an event id.
MS_FROM = 10**12
_EVENT = re.compile(r"#?(\d+)")


class BadMoment(ValueError):
    """``at`` names no moment: neither an ISO time, a ms timestamp nor an event id."""


@dataclass(frozen=True)
class Moment:
    ts_ms: int
    event_id: int | None = None


def parse_moment(realm_id: str, text: str) -> Moment:
    """An ISO time (``2026-12-01T16:20:00Z``), a ms timestamp or an event id (``#123``)."""
    raw = text.strip()
    match = _EVENT.fullmatch(raw)
    if match is not None:
        number = int(match.group(1))
        if number >= MS_FROM and not raw.startswith("#"):
            return Moment(number)
        event = Event.objects.filter(realm_id=realm_id, pk=number).first()
        if event is None:
            raise BadMoment(f"no event #{number} in realm {realm_id}")
        return Moment(event.ts_ms, event.pk)
    try:
        when = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise BadMoment(
            f"expected an ISO time, a ms timestamp or an event id (#N); got {text!r}"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return Moment(int(when.timestamp() * 1000))


@dataclass(frozen=True)
class AgentView:
    agent: str
    request_event: int
    ts_ms: int
    run_id: str
    turn: Any
    step: Any
    system: str | None
    tools: list[Any]
    history: list[dict[str, Any]]
    history_omitted: int
    reply: dict[str, Any] | None
    response: dict[str, Any] | None
    response_event: int | None
    notes: list[str] = field(default_factory=list)

    @property
    def tool_names(self) -> list[str]:
        return [tool_name(t) for t in self.tools]

    def as_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "request_event": self.request_event,
            "ts_ms": self.ts_ms,
            "run_id": self.run_id,
            "turn": self.turn,
            "step": self.step,
            "system": self.system,
            "tools": self.tools,
            "tool_names": self.tool_names,
            "history": self.history,
            "history_omitted": self.history_omitted,
            "reply": self.reply,
            "response": self.response,
            "response_event": self.response_event,
            "notes": self.notes,
        }


def tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        function = tool.get("function")
        if isinstance(function, dict) and function.get("name"):
            return str(function["name"])
        if tool.get("name"):
            return str(tool["name"])
    return "?"


def _data(event: Event) -> dict[str, Any]:
    payload = event.payload if isinstance(event.payload, dict) else {}
    data = payload.get("data")
    return data if isinstance(data, dict) else {}


def _request(event: Event) -> dict[str, Any]:
    request = _data(event).get("request")
    return request if isinstance(request, dict) else {}


def agent_view(realm_id: str, agent: str, moment: Moment | None = None) -> AgentView | None:
    """The agent's last model call at or before ``moment`` (the latest without one)."""
    traced = selectors.events(realm_id, Kind.TRACE).filter(payload__agent_id=agent)
    requests = traced.filter(payload__type="model_request")
    if moment is not None:
        requests = requests.filter(ts_ms__lte=moment.ts_ms)
    found = requests.order_by("-ts_ms", "-id").first()
    if found is None:
        return None
    payload = found.payload
    run_id = str(payload.get("run_id") or "")
    request = _request(found)
    notes: list[str] = []
    if not request:
        notes.append("this runtime's trace records the request's size only, not its messages")
    context = request if "system" in request else _context(requests, found, run_id, request)
    if request and context is None:
        notes.append("the system prompt and tools of this call were not found in the trace")
    response = _response(traced, found, run_id)
    data = _data(response) if response is not None else None
    reply = data.get("reply") if data is not None else None
    omitted = int(request.get("history_omitted") or 0)
    if omitted:
        notes.append(f"{omitted} older messages were sent too but are over the record's bound")
    if context is not None and context.get("tools_clipped"):
        notes.append(f"{context['tools_clipped']} tool schemas are over the record's bound")
    return AgentView(
        agent=agent,
        request_event=found.pk,
        ts_ms=found.ts_ms,
        run_id=run_id,
        turn=payload.get("turn"),
        step=payload.get("step"),
        system=None if context is None else str(context.get("system") or ""),
        tools=[] if context is None else list(context.get("tools") or []),
        history=[m for m in request.get("history") or [] if isinstance(m, dict)],
        history_omitted=omitted,
        reply=reply if isinstance(reply, dict) else None,
        response=None if data is None else {k: v for k, v in data.items() if k != "reply"},
        response_event=None if response is None else response.pk,
        notes=notes,
    )


def _context(
    requests: Any, found: Event, run_id: str, request: dict[str, Any]
) -> dict[str, Any] | None:
    """The last earlier request of the same run that recorded this call's system and tools."""
    digest = request.get("context_digest")
    if not digest:
        return None
    earlier = (
        requests.filter(
            id__lt=found.pk,
            payload__run_id=run_id,
            payload__data__request__context_digest=digest,
        )
        .order_by("-id")
        .iterator()
    )
    for event in earlier:
        candidate = _request(event)
        if "system" in candidate:
            return candidate
    return None


def _response(traced: Any, found: Event, run_id: str) -> Event | None:
    """The record that followed the request: its ``model_response`` (or the failure)."""
    seq = found.payload.get("seq")
    after = traced.filter(
        id__gt=found.pk,
        payload__run_id=run_id,
        payload__type__in=("model_response", "provider_error", "model_request"),
    ).order_by("id")[:5]
    for event in after:
        if event.payload.get("type") == "model_request":
            return None  # the next call began: this one was never answered
        if not isinstance(seq, int) or int(event.payload.get("seq") or 0) > seq:
            answer: Event = event
            return answer
    return None


def view_lines(view: AgentView, *, full: bool = False) -> list[str]:
    """The view for a terminal: the call, the system prompt, the tools offered, the history
    as sent and the reply. ``full`` prints tool schemas and arguments whole."""
    when = datetime.fromtimestamp(view.ts_ms / 1000, UTC).isoformat(timespec="milliseconds")
    lines = [
        f"{view.agent}: model call at {when.replace('+00:00', 'Z')} (trace event "
        f"#{view.request_event}, run {view.run_id}, turn {view.turn}, step {view.step})",
        *(f"note: {note}" for note in view.notes),
        "── system prompt ──",
        *(view.system.splitlines() if view.system is not None else ["(not recorded)"]),
        f"── tools offered ({len(view.tools)}) ──",
    ]
    for tool in view.tools:
        if full:
            lines.append(json.dumps(tool, ensure_ascii=False, indent=2, default=str))
        else:
            function = tool.get("function") if isinstance(tool, dict) else None
            about = function.get("description") if isinstance(function, dict) else None
            lines.append(
                f"{tool_name(tool)}" + (f" — {one_line(str(about), 100)}" if about else "")
            )
    omitted = f", {view.history_omitted} older not kept" if view.history_omitted else ""
    lines.append(f"── history ({len(view.history)} messages{omitted}) ──")
    for message in view.history:
        lines += _message_lines(message, full)
    lines.append("── reply ──")
    if view.reply is None:
        detail = view.response or {}
        lines.append(f"(no reply recorded{': ' + str(detail) if detail else ''})")
    else:
        if view.reply.get("content"):
            lines += str(view.reply["content"]).splitlines()
        for call in view.reply.get("tool_calls") or []:
            lines.append(f"→ {call.get('name')}({_args(call.get('arguments'), full)})")
        if view.response:
            lines.append(f"(finish={view.response.get('finish_reason')})")
    return lines


def _message_lines(message: dict[str, Any], full: bool) -> list[str]:
    role = str(message.get("role") or "?")
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    head = f"[{role}]" + (f" ({message['tool_call_id']})" if message.get("tool_call_id") else "")
    body = text.splitlines() or [""]
    lines = [f"{head} {body[0]}", *(f"    {line}" for line in body[1:])]
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            lines.append(f"    → {function.get('name')}({_args(function.get('arguments'), full)})")
    return lines


def _args(arguments: Any, full: bool) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, default=str)
    return text if full else one_line(text, 200)
