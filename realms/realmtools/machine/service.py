"""The machine of a realm, kept in the Chronicle.

A MACHINE event fixes the declaration and the roster; GAME events after the
last MACHINE event are replayed to rebuild the state. Writes happen under the
realm lock and are appended before they are applied, so the Chronicle is the
state and a restart loses nothing. Replayed states are cached per realm and
only advanced by events the database has committed.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from chronicle.kinds import Kind
from chronicle.models import Event, now_ms
from chronicle.selectors import agents_out
from chronicle.services import record_event
from realms.packages.schema.machine import MachineDef
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal
from realms.realmtools.facts import RealmFacts
from realms.realmtools.machine.engine import Machine, MachineState, Rejected
from realms.realmtools.mechanics import escrow

NO_MACHINE = "no machine declared"
MAX_LOG = 500


@dataclass
class Loaded:
    machine: Machine
    state: MachineState
    machine_event_id: int
    last_event_id: int


_cache: dict[str, Loaded] = {}
_cache_lock = threading.Lock()


def record_machine(facts: RealmFacts) -> Event | None:
    """Write the MACHINE event for a realm that declares a machine (idempotent)."""
    if facts.machine is None:
        return None
    existing: Event | None = Event.objects.filter(realm_id=facts.realm_id, kind=Kind.MACHINE).last()
    if existing is not None:
        return existing
    definition = MachineDef.model_validate(dict(facts.machine))
    machine = Machine(definition, facts.roster, facts.referee)
    return record_event(
        facts.realm_id,
        Kind.MACHINE,
        {
            "version": 1,
            "declaration": definition.model_dump(by_alias=True, mode="json"),
            "members": machine.all_members,
            "roster": list(facts.roster),
            "referee": facts.referee,
        },
    )


def _machine_from(event: Event) -> Machine:
    payload = event.payload
    return Machine(
        MachineDef.model_validate(payload["declaration"]),
        payload["roster"],
        payload.get("referee"),
    )


def _replay(loaded: Loaded, events: list[Event]) -> None:
    for event in events:
        p = event.payload
        op = p.get("op")
        if op == "act":
            loaded.machine.replay_act(
                loaded.state, p["transition"], p["caller"], p.get("args") or {}, event.ts_ms
            )
        elif op == "set":
            loaded.machine.apply_set(loaded.state, p["key"], p.get("value"), p.get("owner"))
        loaded.last_event_id = event.pk


def load(realm_id: str) -> Loaded | None:
    """The machine and its current state, replayed from the Chronicle."""
    machine_event = Event.objects.filter(realm_id=realm_id, kind=Kind.MACHINE).last()
    if machine_event is None:
        return None
    with _cache_lock:
        cached = _cache.get(realm_id)
    if cached is not None and cached.machine_event_id == machine_event.pk:
        loaded = Loaded(
            cached.machine, cached.state.copy(), cached.machine_event_id, cached.last_event_id
        )
    else:
        machine = _machine_from(machine_event)
        loaded = Loaded(machine, machine.initial_state(), machine_event.pk, machine_event.pk)
    events = list(
        Event.objects.filter(realm_id=realm_id, kind=Kind.GAME, pk__gt=loaded.last_event_id)
    )
    _replay(loaded, sorted(events, key=lambda e: e.pk))
    _remember(realm_id, loaded)
    return loaded


def _remember(realm_id: str, loaded: Loaded) -> None:
    snapshot = Loaded(
        loaded.machine, loaded.state.copy(), loaded.machine_event_id, loaded.last_event_id
    )
    with _cache_lock:
        current = _cache.get(realm_id)
        if current is None or (current.machine_event_id, current.last_event_id) <= (
            snapshot.machine_event_id,
            snapshot.last_event_id,
        ):
            _cache[realm_id] = snapshot


def forget(realm_id: str | None = None) -> None:
    """Drop cached states (all realms when ``realm_id`` is None), as a restart would."""
    with _cache_lock:
        if realm_id is None:
            _cache.clear()
        else:
            _cache.pop(realm_id, None)


def _require(caller: Caller) -> Loaded:
    loaded = load(caller.realm_id)
    if loaded is None and caller.facts.machine is not None:
        with realm_lock(caller.realm_id):
            record_machine(caller.facts)
        loaded = load(caller.realm_id)
    if loaded is None:
        raise Refusal(NO_MACHINE)
    return loaded


def _escrow_lookup(realm_id: str) -> Any:
    return lambda label: escrow.submitted(realm_id, label)


def _log_entry(machine: Machine, event: Event, viewer: str) -> dict[str, Any] | None:
    p = event.payload
    referee = viewer == machine.referee
    involved = viewer in (p.get("caller"), p.get("owner"))
    if p.get("log") == "referee" and not referee and not involved:
        return None
    if p.get("op") == "reject" and not referee and p.get("caller") != viewer:
        return None
    entry: dict[str, Any] = {"id": event.pk, "ts": event.ts_ms}
    for name in ("op", "transition", "key", "caller", "from", "to", "actor", "check", "detail"):
        if p.get(name) is not None:
            entry[name] = p[name]
    if p.get("op") == "set":
        visibility = machine.definition.data[p["key"]].visibility
        entry["owner"] = p.get("owner")
        if referee or visibility == "public" or p.get("owner") == viewer:
            entry["value"] = p.get("value")
    elif p.get("args"):
        entry["args"] = p["args"]
    return entry


def _view(caller: Caller, loaded: Loaded, since: int | None, log_limit: int) -> dict[str, Any]:
    limit = max(1, min(MAX_LOG, int(log_limit)))
    events = Event.objects.filter(
        realm_id=caller.realm_id, kind=Kind.GAME, pk__gt=loaded.machine_event_id
    )
    if since is not None:
        chosen = list(events.filter(pk__gt=since).order_by("id"))
    else:
        chosen = list(reversed(events.order_by("-id")))
    entries = [e for e in (_log_entry(loaded.machine, ev, caller.agent_id) for ev in chosen) if e]
    entries = entries[:limit] if since is not None else entries[-limit:]
    last = entries[-1]["id"] if entries else (since or loaded.last_event_id)
    state = loaded.state
    return {
        "state": state.state,
        "terminal": state.state in loaded.machine.definition.terminal,
        "actor": state.actor,
        "actor_since": state.actor_since,
        "data": loaded.machine.visible_data(state, caller.agent_id),
        "log": entries,
        "next_since": last,
    }


def game_state(caller: Caller, since: int | None = None, log_limit: int = 100) -> dict[str, Any]:
    return _view(caller, _require(caller), since, log_limit)


def game_declaration(caller: Caller) -> dict[str, Any]:
    return _require(caller).machine.declaration_for(caller.agent_id)


def _write(
    caller: Caller, loaded: Loaded, new: MachineState, payload: dict[str, Any], args: Any
) -> None:
    """Append the GAME event first, then let the cache move on once it is committed."""
    lookup = _escrow_lookup(caller.realm_id)
    wake = loaded.machine.wakes(loaded.state, new, caller.agent_id, args or {}, lookup)
    out = agents_out(caller.realm_id)
    payload["wake"] = [agent for agent in wake if agent not in out]
    event = record_event(caller.realm_id, Kind.GAME, payload, ts_ms=now_ms())
    after = Loaded(loaded.machine, new, loaded.machine_event_id, event.pk)
    transaction.on_commit(lambda: _remember(caller.realm_id, after))
    loaded.state = new
    loaded.last_event_id = event.pk


def game_act(
    caller: Caller, transition: str, args: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    args = dict(args or {})
    with realm_lock(caller.realm_id):
        loaded = _require(caller)
        before = loaded.state
        try:
            new = loaded.machine.act(
                before,
                transition,
                caller.agent_id,
                args,
                _escrow_lookup(caller.realm_id),
                now_ms(),
            )
        except Rejected as rejected:
            record_event(
                caller.realm_id,
                Kind.GAME,
                {
                    "op": "reject",
                    "transition": transition,
                    "caller": caller.agent_id,
                    "args": args,
                    "from": before.state,
                    "check": rejected.check,
                    "detail": rejected.detail,
                    "log": "referee",
                },
            )
            return {"error": "rejected", "check": rejected.check, "detail": rejected.detail}
        definition = loaded.machine.definition.transitions[transition]
        payload: dict[str, Any] = {
            "op": "act",
            "transition": transition,
            "caller": caller.agent_id,
            "args": args,
            "owner": None,
            "from": before.state,
            "to": new.state,
            "actor": new.actor,
            "log": definition.log,
        }
        _write(caller, loaded, new, payload, args)
        return _view(caller, loaded, None, 20)


def game_set(caller: Caller, key: str, value: Any, owner: str | None = None) -> dict[str, Any]:
    with realm_lock(caller.realm_id):
        loaded = _require(caller)
        entry = loaded.machine.definition.data.get(key)
        if entry is None:
            known = ", ".join(sorted(loaded.machine.definition.data)) or "none"
            raise Refusal(f"{key!r} is not a declared data key; declared: {known}")
        if entry.visibility != "owner" and owner is not None:
            raise Refusal(f"{key!r} is not an owner key; leave owner empty")
        new = loaded.state.copy()
        try:
            loaded.machine.apply_set(new, key, value, owner)
        except Rejected as rejected:
            raise Refusal(rejected.detail) from None
        payload: dict[str, Any] = {
            "op": "set",
            "key": key,
            "caller": caller.agent_id,
            "value": value,
            "owner": owner,
            "from": new.state,
            "to": new.state,
            "actor": new.actor,
            "log": "public" if entry.visibility == "public" else "referee",
        }
        _write(caller, loaded, new, payload, {})
        return _view(caller, loaded, None, 20)


@dataclass(frozen=True)
class IdleNudge:
    """A time-based wake rule that is due: no GAME event for ``after_s`` seconds."""

    rule: int
    since_event: int
    agents: tuple[str, ...]


def due_idle_nudges(realm_id: str, at_ms: int) -> list[IdleNudge]:
    """The ``after_s`` wake rules that hold now and whose idle time has run out.

    Idle time counts from the last GAME event (or the MACHINE declaration before the
    first move); ``since_event`` names that event so a nudge is sent once per quiet spell.
    """
    loaded = load(realm_id)
    if loaded is None or loaded.state.state in loaded.machine.definition.terminal:
        return []
    last = (
        Event.objects.filter(realm_id=realm_id, pk__gte=loaded.machine_event_id)
        .filter(kind__in=(Kind.GAME, Kind.MACHINE))
        .order_by("pk")
        .last()
    )
    if last is None:
        return []
    idle_s = (at_ms - last.ts_ms) / 1000.0
    due: list[IdleNudge] = []
    for index, after_s, role in loaded.machine.idle_rules(loaded.state, _escrow_lookup(realm_id)):
        if idle_s >= after_s:
            agents = tuple(loaded.machine.members(role))
            due.append(IdleNudge(rule=index, since_event=last.pk, agents=agents))
    return due


def current_state(realm_id: str) -> tuple[str, bool] | None:
    """``(state, is_terminal)`` of a realm's machine, or None without one (for the Warden)."""
    loaded = load(realm_id)
    if loaded is None:
        return None
    return loaded.state.state, loaded.state.state in loaded.machine.definition.terminal


class UnknownSeat(ValueError):
    """The seat named is not in the machine's roster."""


def _seat_view(machine: Machine, state: MachineState, seat: str) -> dict[str, Any]:
    return {
        "state": state.state,
        "terminal": state.state in machine.definition.terminal,
        "actor": state.actor,
        "data": machine.visible_data(state, seat),
    }


def seat_history(realm_id: str, seat: str) -> dict[str, Any] | None:
    """The machine step by step as ``seat`` saw it: the view before and after each step,
    with the log entry the seat may read. A step that showed the seat nothing (a hidden
    write, logged for the referee only) is left out. None for a realm with no machine."""
    machine_event = Event.objects.filter(realm_id=realm_id, kind=Kind.MACHINE).last()
    if machine_event is None:
        return None
    machine = _machine_from(machine_event)
    if seat not in machine.roster:
        raise UnknownSeat(
            f"{seat!r} is not a seat of this machine; seats: {', '.join(machine.roster)}"
        )
    state = machine.initial_state()
    initial = _seat_view(machine, state, seat)
    steps: list[dict[str, Any]] = []
    games = Event.objects.filter(realm_id=realm_id, kind=Kind.GAME, pk__gt=machine_event.pk)
    for event in games.order_by("id").iterator():
        before = _seat_view(machine, state, seat)
        p = event.payload
        if p.get("op") == "act":
            machine.replay_act(
                state, p["transition"], p["caller"], p.get("args") or {}, event.ts_ms
            )
        elif p.get("op") == "set":
            machine.apply_set(state, p["key"], p.get("value"), p.get("owner"))
        after = _seat_view(machine, state, seat)
        entry = _log_entry(machine, event, seat)
        if entry is None and before == after:
            continue
        steps.append(
            {"id": event.pk, "ts": event.ts_ms, "entry": entry, "before": before, "after": after}
        )
    return {"initial": initial, "steps": steps, "current": _seat_view(machine, state, seat)}
