"""Scores, penalties, flags, elimination and the verdict: the referee's ledger.

The scoreboard is the sum of SCORE deltas in the Chronicle, so it is always
what was recorded and never a separate copy that could drift.
"""

from __future__ import annotations

import math
import re
from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.selectors import agents_out
from chronicle.services import record_event
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal
from realms.realmtools.mechanics.turns import latest_round

NOBODY = frozenset({"none", "nobody", "no one", "no-one", "n/a", "tie", "-", ""})
MAX_REASON = 2000
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")


def normalise_name(name: str) -> str:
    """Trim non-word edges and lower-case: '@Vela!' -> 'vela'."""
    stripped = name.strip()
    if stripped.lower() in NOBODY:
        return stripped.lower()
    return _EDGES.sub("", stripped).lower()


def scoreboard_of(realm_id: str, participants: tuple[str, ...] = ()) -> dict[str, float]:
    board: dict[str, float] = dict.fromkeys(participants, 0.0)
    for payload in Event.objects.filter(realm_id=realm_id, kind=Kind.SCORE).values_list(
        "payload", flat=True
    ):
        agent = str(payload.get("agent"))
        board[agent] = board.get(agent, 0.0) + float(payload.get("delta") or 0)
    return {agent: round(total, 6) for agent, total in board.items()}


def _board(caller: Caller) -> dict[str, float]:
    return scoreboard_of(caller.realm_id, caller.facts.participants)


def _participant(caller: Caller, agent: str) -> str:
    name = normalise_name(agent)
    if name not in caller.facts.participants:
        roster = ", ".join(caller.facts.participants)
        raise Refusal(f"{agent!r} is not a participant of this realm; roster: {roster}")
    return name


def _reason(reason: str) -> str:
    if len(reason) > MAX_REASON:
        raise Refusal(f"reason is longer than {MAX_REASON} characters")
    return reason.strip()


def _number(value: float, name: str) -> float:
    if not math.isfinite(value):
        raise Refusal(f"{name} must be a finite number")
    return float(value)


def scoreboard(caller: Caller) -> dict[str, Any]:
    return {"scoreboard": _board(caller)}


def score(caller: Caller, agent: str, delta: float, reason: str) -> dict[str, Any]:
    name = _participant(caller, agent)
    payload = {
        "agent": name,
        "delta": _number(delta, "delta"),
        "reason": _reason(reason),
        "issued_by": caller.agent_id,
    }
    with realm_lock(caller.realm_id):
        record_event(caller.realm_id, Kind.SCORE, payload)
    return {"scoreboard": _board(caller)}


def flag(caller: Caller, agent: str, reason: str) -> dict[str, Any]:
    name = _participant(caller, agent)
    text = _reason(reason)
    with realm_lock(caller.realm_id):
        record_event(
            caller.realm_id,
            Kind.VIOLATION,
            {"agent": name, "reason": text, "issued_by": caller.agent_id},
        )
    return {"flagged": name, "reason": text}


def penalize(caller: Caller, agent: str, amount: float, reason: str) -> dict[str, Any]:
    name = _participant(caller, agent)
    text = _reason(reason)
    delta = -abs(_number(amount, "amount"))
    with realm_lock(caller.realm_id):
        record_event(
            caller.realm_id,
            Kind.VIOLATION,
            {"agent": name, "reason": text, "issued_by": caller.agent_id},
        )
        record_event(
            caller.realm_id,
            Kind.SCORE,
            {
                "agent": name,
                "delta": delta,
                "reason": f"penalty: {text}",
                "issued_by": caller.agent_id,
            },
        )
    return {"scoreboard": _board(caller)}


def eliminate(caller: Caller, agent: str, reason: str) -> dict[str, Any]:
    name = normalise_name(agent)
    text = _reason(reason)
    if name in NOBODY:
        with realm_lock(caller.realm_id):
            record_event(
                caller.realm_id,
                Kind.ELIMINATION,
                {"agent": None, "reason": text, "issued_by": caller.agent_id},
            )
        return {"eliminated": None, "note": "round closed, nobody removed"}
    name = _participant(caller, agent)
    with realm_lock(caller.realm_id):
        if name in agents_out(caller.realm_id):
            raise Refusal(f"{name} is already eliminated")
        record_event(
            caller.realm_id,
            Kind.ELIMINATION,
            {"agent": name, "reason": text, "issued_by": caller.agent_id},
        )
    return {
        "eliminated": name,
        "note": f"{name} is out: the platform stops its sandbox and drops it from the turns",
    }


def final_verdict(realm_id: str) -> dict[str, Any] | None:
    for event in Event.objects.filter(realm_id=realm_id, kind=Kind.VERDICT).order_by("id"):
        if event.payload.get("final", True):
            return dict(event.payload)
    return None


def rule(caller: Caller, outcome: str, reasons: str | list[str]) -> dict[str, Any]:
    if not outcome.strip():
        raise Refusal("outcome is empty; state who won or how the realm ended")
    turns = caller.facts.turns
    min_rounds = turns.min_rounds_before_verdict if turns is not None else 0
    with realm_lock(caller.realm_id):
        existing = final_verdict(caller.realm_id)
        if existing is not None:
            raise Refusal(
                "a final verdict already stands; it is unchanged",
                outcome=existing.get("outcome"),
                scoreboard=existing.get("scoreboard"),
            )
        current = latest_round(caller.realm_id)
        if min_rounds and (current or 0) <= min_rounds:
            raise Refusal(
                f"too early: no verdict before round {min_rounds} is complete "
                f"(the realm is in round {current or 0})"
            )
        board = _board(caller)
        record_event(
            caller.realm_id,
            Kind.VERDICT,
            {
                "outcome": outcome.strip(),
                "reasons": reasons,
                "scoreboard": board,
                "issued_by": caller.agent_id,
                "final": True,
            },
        )
    return {"outcome": outcome.strip(), "scoreboard": board}
