"""One line per Chronicle event for the realm page's timeline.

The same words whether the page renders an event or the websocket brings it (the feed
carries the line), so the browser never guesses at a payload's meaning.
"""

from __future__ import annotations

from typing import Any

from chronicle.kinds import Kind

# Kinds the timeline leaves out: spend has its chart, the rest is bookkeeping (traces are
# pit_trace's, keys and manifests the run configuration's).
HIDDEN = frozenset({Kind.SPEND, Kind.TRACE, Kind.KEY, Kind.TOOL_MANIFEST})
_LONGEST = 240


def shown(kind: str) -> bool:
    return kind not in HIDDEN


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LONGEST else text[: _LONGEST - 1] + "…"


def _brief(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={_brief(v)}" for k, v in list(value.items())[:6])
    if isinstance(value, list):
        return "[" + ", ".join(_brief(v) for v in value[:6]) + ("…" if len(value) > 6 else "") + "]"
    return str(value)


def _turn(p: dict[str, Any]) -> str:
    event = p.get("event")
    if event is None and p.get("current"):
        return f"{p['current']}'s turn (round {p.get('round')})"
    if event == "round_complete":
        return f"round {p.get('completed')} complete; round {p.get('round')} begins"
    who = p.get("agent") or p.get("awaiting") or ""
    return f"{event} {who} (round {p.get('round')})".replace("  ", " ")


def _tool_result(p: dict[str, Any]) -> str:
    head = f"{p.get('agent')} ← {p.get('tool')}"
    if p.get("ok") is False:
        return f"{head}: refused: {p.get('error')}"
    return f"{head}: {_brief(p.get('result', {}))}"


def _score(p: dict[str, Any]) -> str:
    delta = p.get("delta")
    sign = f"{delta:+g}" if isinstance(delta, int | float) else str(delta)
    reason = f" ({p['reason']})" if p.get("reason") else ""
    return f"{p.get('agent')} {sign}{reason}"


def _elimination(p: dict[str, Any]) -> str:
    if not p.get("agent"):
        return f"round closed, nobody out ({p.get('reason')})"
    return f"{p['agent']} eliminated: {p.get('reason')}"


def _lifecycle(p: dict[str, Any]) -> str:
    event, agent = p.get("event"), p.get("agent")
    if event == "budget_exhausted":
        return f"{agent} ran out of budget"
    if event == "agent_killed":
        return f"{agent} stopped by the budget policy"
    detail = p.get("detail") or p.get("reason") or p.get("error") or ""
    return f"realm {event}" + (f": {detail}" if detail else "")


def _system(p: dict[str, Any]) -> str:
    if p.get("event") == "nudge":
        return f"nudge {p.get('n')} to {', '.join(map(str, p.get('to') or [])) or 'everyone'}"
    rest = {k: v for k, v in p.items() if k != "event"}
    return f"{p.get('event')}" + (f": {_brief(rest)}" if rest else "")


def summary(kind: str, payload: dict[str, Any]) -> str:
    p = payload
    match kind:
        case Kind.TURN:
            text = _turn(p)
        case Kind.TOOL_CALL:
            text = f"{p.get('agent')} → {p.get('tool')}({_brief(p.get('args', {}))})"
        case Kind.TOOL_RESULT:
            text = _tool_result(p)
        case Kind.SEALED_SUBMIT:
            text = f"{p.get('agent')} sealed a submission for round {p.get('round')}"
        case Kind.REVEAL:
            opened = p.get("submissions")
            count = len(opened) if isinstance(opened, list | dict) else 0
            text = f"round {p.get('round')} revealed: {count} submissions"
        case Kind.SCORE:
            text = _score(p)
        case Kind.ELIMINATION:
            text = _elimination(p)
        case Kind.VERDICT:
            text = f"verdict: {p.get('outcome')}"
        case Kind.VIOLATION:
            text = f"{p.get('agent')} flagged: {p.get('reason')}"
        case Kind.LIFECYCLE:
            text = _lifecycle(p)
        case Kind.SYSTEM:
            text = _system(p)
        case _:
            text = _brief(p)
    return _clip(text)
