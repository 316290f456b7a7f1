"""Sealed submit, reveal and tally, rebuilt from SEALED_SUBMIT and REVEAL events.

Round labels are exact strings (``R2`` is not ``2``). Payloads are sealed at
rest; only ``reveal`` (or ``tally``) opens them, once, for the referee.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from realms.realmtools import rulesets, sealing
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal

MAX_ROUND = 100
MAX_PAYLOAD = 4000


@dataclass(frozen=True)
class Round:
    sealed: dict[str, str]
    revealed: dict[str, str] | None


def load_round(realm_id: str, round_label: str) -> Round:
    sealed: dict[str, str] = {}
    revealed: dict[str, str] | None = None
    events = Event.objects.filter(
        realm_id=realm_id, kind__in=[Kind.SEALED_SUBMIT, Kind.REVEAL]
    ).order_by("id")
    for event in events:
        if event.payload.get("round") != round_label:
            continue
        if event.kind == Kind.SEALED_SUBMIT:
            sealed.setdefault(str(event.payload["agent"]), str(event.payload["sealed"]))
        elif revealed is None:
            revealed = {str(k): str(v) for k, v in event.payload["submissions"].items()}
    return Round(sealed=sealed, revealed=revealed)


def submitted(realm_id: str, round_label: str) -> frozenset[str]:
    return frozenset(load_round(realm_id, round_label).sealed)


def _label(round_label: str) -> str:
    if not round_label or len(round_label) > MAX_ROUND:
        raise Refusal(f"round must be a label of 1-{MAX_ROUND} characters, e.g. 'R1'")
    return round_label


def submit_sealed(caller: Caller, round: str, payload: str) -> str:
    label = _label(round)
    if caller.is_referee:
        raise Refusal("the referee does not submit; players do")
    if caller.agent_id not in caller.facts.participants:
        raise Refusal(f"{caller.agent_id} is not a participant of this realm")
    if not payload.strip():
        raise Refusal("payload is empty; submit your move or bid as text")
    if len(payload) > MAX_PAYLOAD:
        raise Refusal(f"payload is longer than {MAX_PAYLOAD} characters")
    with realm_lock(caller.realm_id):
        state = load_round(caller.realm_id, label)
        if state.revealed is not None:
            raise Refusal(f"round {label!r} is already revealed; submissions are closed")
        if caller.agent_id in state.sealed:
            raise Refusal(f"you already submitted for round {label!r}; submissions are final")
        record_event(
            caller.realm_id,
            Kind.SEALED_SUBMIT,
            {"round": label, "agent": caller.agent_id, "sealed": sealing.seal(payload)},
        )
    return f"Sealed for round {label}. Nobody sees it until the referee reveals the round."


def reveal_status(caller: Caller, round: str) -> dict[str, Any]:
    state = load_round(caller.realm_id, _label(round))
    done = sorted(state.sealed)
    pending = sorted(set(caller.facts.participants) - set(state.sealed))
    return {"submitted": done, "pending": pending, "revealed": state.revealed is not None}


def _open(caller: Caller, label: str) -> dict[str, str]:
    state = load_round(caller.realm_id, label)
    if state.revealed is not None:
        raise Refusal(f"round {label!r} was already revealed", submissions=state.revealed)
    opened = {agent: sealing.unseal(sealed) for agent, sealed in sorted(state.sealed.items())}
    record_event(caller.realm_id, Kind.REVEAL, {"round": label, "submissions": opened})
    return opened


def reveal(caller: Caller, round: str) -> dict[str, Any]:
    label = _label(round)
    with realm_lock(caller.realm_id):
        return dict(_open(caller, label))


def tally(
    caller: Caller, round: str, ruleset: str, config: Mapping[str, Any] | None
) -> dict[str, Any]:
    label = _label(round)
    rule = rulesets.resolve(ruleset)
    with realm_lock(caller.realm_id):
        state = load_round(caller.realm_id, label)
        submissions = state.revealed if state.revealed is not None else _open(caller, label)
        outcome = rule(submissions, config or {})
        record_event(
            caller.realm_id,
            Kind.TALLY,
            {"round": label, "ruleset": ruleset, "config": dict(config or {}), **outcome},
        )
    return {**outcome}
