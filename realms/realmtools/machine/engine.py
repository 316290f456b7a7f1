"""The state-machine engine: guards, effects, authority, visibility and wakes.

Pure: no database. The service replays chronicled GAME events through
:meth:`Machine.replay_act` / :meth:`Machine.apply_set` to rebuild a
:class:`MachineState`, and checks new acts with :meth:`Machine.act`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from realms.packages.machine import GUARDS as CHECKED_GUARDS
from realms.packages.schema.machine import MachineDef, TransitionDef, WakeRule

EscrowLookup = Callable[[str], frozenset[str]]
PARTICIPANT_SAFE = frozenset({"advance_actor"})
GUARDS = frozenset(CHECKED_GUARDS)


class Rejected(Exception):
    """An act the machine refuses; ``check`` names which check failed."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


@dataclass
class MachineState:
    state: str
    actor: str | None = None
    actor_since: int | None = None
    values: dict[str, Any] = field(default_factory=dict)
    sets: dict[str, list[str]] = field(default_factory=dict)
    owned: dict[str, dict[str, Any]] = field(default_factory=dict)
    revealed: dict[str, list[str]] = field(default_factory=dict)

    def copy(self) -> MachineState:
        return copy.deepcopy(self)


def _clause(clause: str | Mapping[str, Any]) -> tuple[str, Any]:
    if isinstance(clause, str):
        return clause, None
    name, arg = next(iter(clause.items()))
    return str(name), arg


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    scalars = (str, int, float, bool)
    return isinstance(a, scalars) and isinstance(b, scalars) and str(a) == str(b)


@dataclass
class _Ctx:
    caller: str
    args: Mapping[str, Any]
    state: MachineState
    escrow: EscrowLookup


class Machine:
    """One declared machine bound to its realm's roster."""

    def __init__(self, definition: MachineDef, roster: Iterable[str], referee: str | None) -> None:
        self.definition = definition
        self.roster = tuple(roster)
        self.referee = referee
        self.participants = tuple(a for a in self.roster if a != referee)
        self._members = {name: self._resolve_members(name) for name in definition.roles}

    # -- roles ---------------------------------------------------------------

    def _resolve_members(self, role: str) -> tuple[str, ...]:
        members = self.definition.roles[role].members
        if members == "referee":
            return (self.referee,) if self.referee else ()
        if members == "participants":
            return self.participants
        wanted = set(_as_list(members))
        return tuple(a for a in self.roster if a in wanted)

    def members(self, role: str) -> tuple[str, ...]:
        if role not in self._members:
            raise Rejected("guards", f"unknown role {role!r}")
        return self._members[role]

    @property
    def all_members(self) -> dict[str, list[str]]:
        return {role: list(ids) for role, ids in self._members.items()}

    def is_participant_role(self, role: str) -> bool:
        return self.definition.roles[role].members != "referee"

    def initial_state(self) -> MachineState:
        sets: dict[str, list[str]] = {
            k: [] for k, d in self.definition.data.items() if d.type == "set"
        }
        return MachineState(state=self.definition.initial, sets=sets)

    # -- expressions and data --------------------------------------------------

    def _value(self, expr: Any, ctx: _Ctx, check: str) -> Any:
        if not isinstance(expr, str) or not expr.startswith("$"):
            return expr
        if expr == "$caller":
            return ctx.caller
        if expr.startswith("$args."):
            name = expr[len("$args.") :]
            if name not in ctx.args:
                raise Rejected(check, f"missing argument {name!r} (pass it in args)")
            return ctx.args[name]
        if expr == "$data.actor":
            return ctx.state.actor
        if expr.startswith("$data."):
            return self._read(ctx.state, expr[len("$data.") :])
        return expr

    def _read(self, state: MachineState, key: str) -> Any:
        if key == "actor":
            return state.actor
        if key in state.sets:
            return list(state.sets[key])
        return state.values.get(key)

    def _data(self, key: Any, check: str, kind: str | None = None) -> str:
        entry = self.definition.data.get(key) if isinstance(key, str) else None
        if entry is None:
            raise Rejected(check, f"{key!r} is not a declared data key")
        if kind == "set" and entry.type != "set":
            raise Rejected(check, f"{key!r} is not a set")
        if kind == "owner" and entry.visibility != "owner":
            raise Rejected(check, f"{key!r} is not an owner key")
        return str(key)

    def _minus(self, state: MachineState, keys: Any, check: str) -> set[str]:
        out: set[str] = set()
        for key in _as_list(keys):
            out |= set(state.sets.get(self._data(key, check, "set"), []))
        return out

    def _pool(self, arg: Mapping[str, Any], state: MachineState, check: str) -> list[str]:
        minus = self._minus(state, arg.get("minus"), check)
        return [m for m in self.members(str(arg.get("over"))) if m not in minus]

    # -- guards ----------------------------------------------------------------

    def guard_holds(self, clause: str | Mapping[str, Any], ctx: _Ctx) -> bool:
        name, arg = _clause(clause)
        s = ctx.state
        if name == "caller_is_actor":
            return s.actor is not None and s.actor == ctx.caller
        if name in ("caller_in", "caller_not_in"):
            inside = ctx.caller in s.sets.get(self._data(arg, "guards", "set"), [])
            return inside if name == "caller_in" else not inside
        if name == "data_equals":
            key = arg.get("key")
            current = s.actor if key == "actor" else self._read(s, self._data(key, "guards"))
            return _same(current, self._value(arg.get("value"), ctx, "guards"))
        if name == "data_present":
            if arg == "actor":
                return s.actor is not None
            key = self._data(arg, "guards")
            return bool(s.sets.get(key) or s.owned.get(key) or s.values.get(key) is not None)
        if name == "data_set_empty":
            return not s.sets.get(self._data(arg, "guards", "set"))
        if name == "members_count":
            count = len(self._pool(arg, s, "guards"))
            if "equals" in arg:
                return count == int(arg["equals"])
            if "at_most" in arg:
                return count <= int(arg["at_most"])
            if "at_least" in arg:
                return count >= int(arg["at_least"])
            raise Rejected("guards", "members_count needs equals, at_most or at_least")
        if name == "data_set_full":
            have = set(s.sets.get(self._data(arg.get("key"), "guards", "set"), []))
            return set(self._pool(arg, s, "guards")) <= have
        if name == "escrow_complete":
            label = str(self._value(arg.get("round"), ctx, "guards"))
            return set(self._pool(arg, s, "guards")) <= ctx.escrow(label)
        raise Rejected("guards", f"unknown guard {name!r}")

    # -- effects ---------------------------------------------------------------

    def _pointer_member(self, value: Any, check: str) -> str:
        pointer = self.definition.actor
        pool = self.members(pointer.over) if pointer else self.roster
        if not isinstance(value, str) or value not in pool:
            raise Rejected(check, f"{value!r} is not one of {', '.join(pool)}")
        return value

    def _set_actor(self, state: MachineState, actor: str | None, now: int) -> None:
        if actor != state.actor:
            state.actor_since = now
        state.actor = actor

    def _skipped(self, state: MachineState) -> set[str]:
        pointer = self.definition.actor
        return self._minus(state, pointer.skip if pointer else [], "effect")

    def apply_effect(self, clause: str | Mapping[str, Any], ctx: _Ctx, now: int) -> None:
        name, arg = _clause(clause)
        s = ctx.state
        if name == "advance_actor":
            pointer = self.definition.actor
            if pointer is None:
                raise Rejected("effect", "advance_actor needs an actor pointer")
            pool = self.members(pointer.over)
            skipped = self._skipped(s)
            start = pool.index(s.actor) + 1 if s.actor in pool else 0
            ring = [pool[(start + i) % len(pool)] for i in range(len(pool))]
            self._set_actor(s, next((m for m in ring if m not in skipped), None), now)
        elif name in ("add_to", "remove_from"):
            key = self._data(arg.get("key"), "effect", "set")
            member = self._pointer_member(self._value(arg.get("value"), ctx, "effect"), "effect")
            current = s.sets.setdefault(key, [])
            if name == "add_to" and member not in current:
                current.append(member)
            elif name == "remove_from" and member in current:
                current.remove(member)
        elif name == "reset":
            s.sets[self._data(arg, "effect", "set")] = []
        elif name == "set":
            key = self._data(arg.get("key"), "effect")
            entry = self.definition.data[key]
            if entry.visibility == "owner":
                raise Rejected("effect", f"{key!r} is an owner key; only game_set writes it")
            value = self._value(arg.get("value"), ctx, "effect")
            if entry.type == "set":
                s.sets[key] = list(dict.fromkeys(_as_list(value)))
            else:
                s.values[key] = value
        elif name == "unset":
            key = self._data(arg, "effect")
            if self.definition.data[key].type == "set":
                raise Rejected("effect", f"{key!r} is a set; use reset")
            s.values.pop(key, None)
            s.owned.pop(key, None)
            s.revealed.pop(key, None)
        elif name == "set_actor":
            value = self._value(arg, ctx, "effect")
            if value is None:
                self._set_actor(s, None, now)
            else:
                member = self._pointer_member(value, "effect")
                if member in self._skipped(s):
                    raise Rejected("effect", f"{member} is skipped by the actor pointer now")
                self._set_actor(s, member, now)
        elif name == "reveal":
            key = self._data(arg.get("key"), "effect", "owner")
            owners_expr = arg.get("owners")
            if isinstance(owners_expr, Mapping):
                owners = self._pool(owners_expr, s, "effect")
            else:
                owners = _as_list(self._value(owners_expr, ctx, "effect"))
            shown = s.revealed.setdefault(key, [])
            shown.extend(o for o in owners if o not in shown)
        else:
            raise Rejected("effect", f"unknown effect {name!r}")

    def _authority(self, transition: TransitionDef) -> None:
        """Participant roles use only the safe effects unless the declaration opts in."""
        if not self.is_participant_role(transition.by):
            return
        allowed = set(self.definition.participant_effects)
        for clause in transition.effects:
            name, arg = _clause(clause)
            if name in allowed or name in PARTICIPANT_SAFE:
                continue
            if name == "add_to" and isinstance(arg, Mapping) and arg.get("value") == "$caller":
                continue
            if name == "reveal" and isinstance(arg, Mapping) and arg.get("owners") == "$caller":
                continue
            raise Rejected(
                "effect",
                f"role {transition.by!r} is a participant role and may not use {name!r} "
                "(not listed in participant_effects)",
            )

    # -- acts ------------------------------------------------------------------

    def transition(self, name: str) -> TransitionDef:
        found = self.definition.transitions.get(name)
        if found is None:
            known = ", ".join(sorted(self.definition.transitions))
            raise Rejected("exists", f"no transition {name!r}; declared: {known}")
        return found

    def _apply(self, t: TransitionDef, ctx: _Ctx, now: int) -> None:
        for clause in t.effects:
            self.apply_effect(clause, ctx, now)
        if t.to != "same":
            ctx.state.state = t.to

    def act(
        self,
        state: MachineState,
        name: str,
        caller: str,
        args: Mapping[str, Any],
        escrow: EscrowLookup,
        now: int,
    ) -> MachineState:
        """Check every rule, then return the new state; raise Rejected otherwise."""
        t = self.transition(name)
        if "any" not in t.from_ and state.state not in t.from_:
            raise Rejected("from", f"{name!r} is not allowed in state {state.state!r}")
        if t.by not in self.definition.roles or caller not in self.members(t.by):
            raise Rejected("by", f"{name!r} is for role {t.by!r}; you are not in it")
        for clause in t.guard:
            if not self.guard_holds(clause, _Ctx(caller, args, state, escrow)):
                raise Rejected("guards", f"guard {_clause(clause)[0]!r} does not hold")
        self._authority(t)
        new = state.copy()
        self._apply(t, _Ctx(caller, args, new, escrow), now)
        if t.to != "same" and t.to not in self.definition.states:
            raise Rejected("effect", f"target state {t.to!r} is not declared")
        return new

    def replay_act(
        self, state: MachineState, name: str, caller: str, args: Mapping[str, Any], now: int
    ) -> None:
        """Re-apply a chronicled act (its checks passed when it was written)."""
        self._apply(self.transition(name), _Ctx(caller, args, state, _no_escrow), now)

    def apply_set(self, state: MachineState, key: str, value: Any, owner: str | None) -> None:
        key = self._data(key, "effect")
        entry = self.definition.data[key]
        if entry.visibility == "owner":
            if owner not in self.roster:
                raise Rejected("effect", f"{key!r} is an owner key; give an owner from the roster")
            state.owned.setdefault(key, {})[str(owner)] = value
        elif entry.type == "set":
            if not isinstance(value, list):
                raise Rejected("effect", f"{key!r} is a set; give a list")
            state.sets[key] = list(dict.fromkeys(str(v) for v in value))
        else:
            state.values[key] = value

    # -- views and wakes -------------------------------------------------------

    def visible_data(self, state: MachineState, viewer: str) -> dict[str, Any]:
        referee = viewer == self.referee
        out: dict[str, Any] = {}
        for key, entry in self.definition.data.items():
            if entry.visibility == "referee" and not referee:
                continue
            if entry.visibility == "owner":
                owned = state.owned.get(key, {})
                shown = set(state.revealed.get(key, [])) | {viewer}
                out[key] = {o: v for o, v in owned.items() if referee or o in shown}
            elif entry.type == "set":
                out[key] = list(state.sets.get(key, []))
            elif key in state.values:
                out[key] = state.values[key]
        return out

    def _rule_holds(self, rule: WakeRule, ctx: _Ctx) -> bool:
        return all(self.guard_holds(c, ctx) for c in rule.when) and not any(
            self.guard_holds(c, ctx) for c in rule.unless
        )

    def wakes(
        self,
        before: MachineState,
        after: MachineState,
        caller: str,
        args: Mapping[str, Any],
        escrow: EscrowLookup,
    ) -> list[str]:
        """Edge-triggered wakes: rules that became true (or a new actor) with this write."""
        woken: list[str] = []
        for rule in self.definition.wake:
            if rule.after_s is not None:
                continue  # time-based nudges are the Warden's
            was = self._rule_holds(rule, _Ctx(caller, args, before, escrow))
            now = self._rule_holds(rule, _Ctx(caller, args, after, escrow))
            if rule.role == "actor":
                fire = now and after.actor is not None and (after.actor != before.actor or not was)
                targets: Iterable[str] = [after.actor] if fire and after.actor else []
            else:
                targets = self.members(rule.role) if now and not was else []
            woken.extend(t for t in targets if t != caller and t not in woken)
        return woken

    def idle_rules(self, state: MachineState, escrow: EscrowLookup) -> list[tuple[int, int, str]]:
        """Time-based wake rules that hold in ``state``: ``(rule index, after_s, role)``.

        Whether the machine has been idle for long enough is the Warden's question.
        """
        held: list[tuple[int, int, str]] = []
        for index, rule in enumerate(self.definition.wake):
            if rule.after_s is None:
                continue
            if self._rule_holds(rule, _Ctx("", {}, state, escrow)):
                held.append((index, rule.after_s, rule.role))
        return held

    def declaration_for(self, viewer: str) -> dict[str, Any]:
        """The declaration as the viewer may see it: hidden memberships stripped."""
        data = self.definition.model_dump(by_alias=True, mode="json")
        members = self.all_members
        if viewer != self.referee:
            for role, spec in self.definition.roles.items():
                if spec.visibility == "hidden":
                    data["roles"][role]["members"] = "hidden"
                    members[role] = []
        return {"machine": data, "members": members}


def _no_escrow(label: str) -> frozenset[str]:
    return frozenset()
