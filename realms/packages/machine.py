"""Load-time rules of a state-machine declaration.

The engine that runs a machine trusts its declaration, so every reference (state, role, data
key, argument) and every authority and visibility rule is checked here, and each problem is
reported at its own field.
"""

from __future__ import annotations

import re
from typing import Any

from realms.packages.errors import PackageError, describe_value, join_path
from realms.packages.schema.machine import MachineDef

GUARDS = (
    "caller_is_actor",
    "caller_in",
    "caller_not_in",
    "data_equals",
    "data_present",
    "data_set_empty",
    "members_count",
    "data_set_full",
    "escrow_complete",
)
EFFECTS = (
    "advance_actor",
    "add_to",
    "remove_from",
    "reset",
    "set",
    "unset",
    "set_actor",
    "reveal",
)
# A participant role may mark itself, show its own hand, and pass; anything else is opt-in.
SAFE_EFFECTS = ("advance_actor", "add_to", "reveal")
# Guards whose refusal text would reveal what they read, so a public log may not use them on
# referee-only keys.
HIDDEN_READING = ("caller_in", "caller_not_in", "data_equals", "data_set_empty", "data_set_full")
CALLER_GUARDS = ("caller_is_actor", "caller_in", "caller_not_in")
AFTER_S_FLOOR = 240
_COUNT_BOUNDS = ("equals", "at_most", "at_least")
_ARG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _options(values: list[str] | tuple[str, ...]) -> str:
    return ", ".join(values) if values else "(none declared)"


class _Checker:
    def __init__(
        self,
        machine: MachineDef,
        *,
        file: str,
        prefix: str,
        roster: list[str],
        referee: str | None,
        turns: bool,
    ) -> None:
        self.m = machine
        self.file = file
        self.prefix = prefix
        self.roster = roster
        self.referee = referee
        self.turns = turns
        self.errors: list[PackageError] = []
        self.states = list(dict.fromkeys(machine.states))
        self.roles = list(machine.roles)
        self.keys = list(machine.data)
        self.set_keys = [k for k, d in machine.data.items() if d.type == "set"]

    # -- reporting ---------------------------------------------------------------------------
    def expect(self, path: str, what: str, value: Any) -> None:
        self.errors.append(
            PackageError(
                file=self.file,
                field=join_path(self.prefix, path),
                expected=what,
                found=describe_value(value),
            )
        )

    def say(self, path: str, message: str) -> None:
        self.errors.append(
            PackageError(file=self.file, field=join_path(self.prefix, path), message=message)
        )

    # -- reference checks --------------------------------------------------------------------
    def state(self, path: str, value: str, *extra: str) -> None:
        if value not in self.states and value not in extra:
            allowed = [*self.states, *extra]
            self.expect(path, f"a declared state ({_options(allowed)})", value)

    def role(self, path: str, value: Any) -> None:
        if not isinstance(value, str) or value not in self.m.roles:
            self.expect(path, f"a declared role ({_options(self.roles)})", value)

    def set_key(self, path: str, value: Any) -> None:
        if not isinstance(value, str) or not self.m.is_set(value):
            self.expect(path, f"a declared set key ({_options(self.set_keys)})", value)

    def data_key(self, path: str, value: Any, *, allow_actor: bool = False) -> None:
        if allow_actor and value == "actor":
            return
        if not isinstance(value, str) or value not in self.m.data:
            extra = ["actor"] if allow_actor else []
            self.expect(path, f"a declared data key ({_options([*self.keys, *extra])})", value)

    def minus(self, path: str, value: Any) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            self.expect(path, "a list of set keys", value)
            return
        for index, item in enumerate(value):
            self.set_key(f"{path}[{index}]", item)

    def expression(self, path: str, value: Any) -> None:
        """A value expression: a literal, ``$caller``, ``$args.<name>`` or ``$data.<key>``."""
        if not isinstance(value, str) or not value.startswith("$"):
            return
        if value == "$caller":
            return
        if value.startswith("$args."):
            if not _ARG_NAME.fullmatch(value.removeprefix("$args.")):
                self.expect(path, "$args.<name> with a name of letters, digits and _", value)
            return
        if value.startswith("$data."):
            self.data_key(path, value.removeprefix("$data."), allow_actor=True)
            return
        self.expect(path, "a literal, $caller, $args.<name> or $data.<key>", value)

    def fields(
        self, path: str, arg: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()
    ) -> dict[str, Any] | None:
        """Check an object argument's keys; returns it when it is an object."""
        if not isinstance(arg, dict):
            self.expect(path, "an object with " + ", ".join(required), arg)
            return None
        for key in arg:
            if key not in required and key not in optional:
                self.say(join_path(path, str(key)), "unknown field")
        for key in required:
            if key not in arg:
                self.say(join_path(path, key), "required field missing")
        return arg

    # -- clauses -----------------------------------------------------------------------------
    @staticmethod
    def split(clause: str | dict[str, Any]) -> tuple[str, Any, bool]:
        if isinstance(clause, str):
            return clause, None, True
        name, arg = next(iter(clause.items()))
        return name, arg, False

    def guard(self, path: str, clause: str | dict[str, Any], *, public_log: bool) -> None:
        name, arg, bare = self.split(clause)
        if name not in GUARDS:
            self.expect(path, f"a guard ({_options(GUARDS)})", name)
            return
        where = path if bare else join_path(path, name)
        if name == "caller_is_actor":
            if not bare and arg is not None:
                self.expect(where, "no argument", arg)
            if self.m.actor is None:
                self.say(where, "caller_is_actor needs an actor pointer (machine.actor)")
            return
        if bare:
            self.say(path, f"guard {name} needs an argument")
            return
        read_key: Any = None
        if name in ("caller_in", "caller_not_in", "data_set_empty"):
            self.set_key(where, arg)
            read_key = arg
        elif name == "data_present":
            self.data_key(where, arg, allow_actor=True)
            read_key = arg
        elif name == "data_equals":
            body = self.fields(where, arg, ("key", "value"))
            if body is not None:
                if "key" in body:
                    self.data_key(join_path(where, "key"), body["key"], allow_actor=True)
                if "value" in body:
                    self.expression(join_path(where, "value"), body["value"])
                read_key = body.get("key")
        elif name == "members_count":
            body = self.fields(where, arg, ("over",), ("minus", *_COUNT_BOUNDS))
            if body is not None:
                if "over" in body:
                    self.role(join_path(where, "over"), body["over"])
                self.minus(join_path(where, "minus"), body.get("minus"))
                bounds = [key for key in _COUNT_BOUNDS if key in body]
                if len(bounds) != 1:
                    self.say(where, "give exactly one of equals, at_most, at_least")
                for key in bounds:
                    number = body[key]
                    if isinstance(number, bool) or not isinstance(number, int) or number < 0:
                        self.expect(join_path(where, key), "a literal whole number ≥ 0", number)
        elif name == "data_set_full":
            body = self.fields(where, arg, ("key", "over"), ("minus",))
            if body is not None:
                if "key" in body:
                    self.set_key(join_path(where, "key"), body["key"])
                if "over" in body:
                    self.role(join_path(where, "over"), body["over"])
                self.minus(join_path(where, "minus"), body.get("minus"))
                read_key = body.get("key")
        elif name == "escrow_complete":
            body = self.fields(where, arg, ("round", "over"), ("minus",))
            if body is not None:
                if "round" in body:
                    round_label = body["round"]
                    if not isinstance(round_label, str | int) or isinstance(round_label, bool):
                        self.expect(join_path(where, "round"), "a round label", round_label)
                    self.expression(join_path(where, "round"), round_label)
                if "over" in body:
                    self.role(join_path(where, "over"), body["over"])
                self.minus(join_path(where, "minus"), body.get("minus"))
        if public_log and name in HIDDEN_READING and isinstance(read_key, str):
            entry = self.m.data.get(read_key)
            if entry is not None and entry.visibility == "referee":
                self.say(
                    where,
                    f"a public-log transition may not read the referee-only key {read_key} "
                    f"(set log: referee, or make the key public)",
                )

    def effect(self, path: str, clause: str | dict[str, Any], *, by_participants: bool) -> None:
        name, arg, bare = self.split(clause)
        if name not in EFFECTS:
            self.expect(path, f"an effect ({_options(EFFECTS)})", name)
            return
        where = path if bare else join_path(path, name)
        opted_in = name in self.m.participant_effects
        if by_participants and name not in SAFE_EFFECTS and not opted_in:
            self.say(
                where,
                f"a participant role may not use {name} unless participant_effects lists it",
            )
        if name == "advance_actor":
            if not bare and arg is not None:
                self.expect(where, "no argument", arg)
            if self.m.actor is None:
                self.say(where, "advance_actor needs an actor pointer (machine.actor)")
            return
        if name == "set_actor":
            if bare:
                self.say(path, "set_actor needs a value (or null)")
                return
            if self.m.actor is None:
                self.say(where, "set_actor needs an actor pointer (machine.actor)")
            self.expression(where, arg)
            return
        if bare:
            self.say(path, f"effect {name} needs an argument")
            return
        if name == "reset":
            self.set_key(where, arg)
        elif name == "unset":
            if isinstance(arg, str) and self.m.is_set(arg):
                self.expect(where, "a value key (use reset for a set)", arg)
            else:
                self.data_key(where, arg)
        elif name in ("add_to", "remove_from"):
            body = self.fields(where, arg, ("key", "value"))
            if body is not None:
                if "key" in body:
                    self.set_key(join_path(where, "key"), body["key"])
                if "value" in body:
                    self.expression(join_path(where, "value"), body["value"])
                    if (
                        by_participants
                        and name == "add_to"
                        and not opted_in
                        and body["value"] != "$caller"
                    ):
                        self.expect(
                            join_path(where, "value"),
                            "$caller (a participant role may only add itself unless "
                            "participant_effects lists add_to)",
                            body["value"],
                        )
        elif name == "set":
            body = self.fields(where, arg, ("key", "value"))
            if body is not None:
                key = body.get("key")
                if "key" in body:
                    entry = self.m.data.get(key) if isinstance(key, str) else None
                    if entry is not None and entry.visibility == "owner":
                        self.expect(
                            join_path(where, "key"),
                            "a key that is not owner-visible (owner values are written "
                            "with game_set)",
                            key,
                        )
                    else:
                        self.data_key(join_path(where, "key"), key)
                if "value" in body:
                    self.expression(join_path(where, "value"), body["value"])
        elif name == "reveal":
            body = self.fields(where, arg, ("key", "owners"))
            if body is not None:
                key = body.get("key")
                if "key" in body:
                    entry = self.m.data.get(key) if isinstance(key, str) else None
                    if entry is None or entry.visibility != "owner":
                        owner_keys = [k for k, d in self.m.data.items() if d.visibility == "owner"]
                        self.expect(
                            join_path(where, "key"),
                            f"an owner-visibility key ({_options(owner_keys)})",
                            key,
                        )
                if "owners" in body:
                    owners = body["owners"]
                    owners_path = join_path(where, "owners")
                    if isinstance(owners, dict):
                        spec = self.fields(owners_path, owners, ("over",), ("minus",))
                        if spec is not None:
                            if "over" in spec:
                                self.role(join_path(owners_path, "over"), spec["over"])
                            self.minus(join_path(owners_path, "minus"), spec.get("minus"))
                    else:
                        self.expression(owners_path, owners)
                    if by_participants and not opted_in and owners != "$caller":
                        self.expect(
                            owners_path,
                            "$caller (a participant role may only reveal its own value "
                            "unless participant_effects lists reveal)",
                            owners,
                        )

    # -- the declaration ---------------------------------------------------------------------
    def run(self) -> list[PackageError]:
        m = self.m
        seen: set[str] = set()
        for index, state in enumerate(m.states):
            if state in seen:
                self.expect(f"states[{index}]", "each state declared once", state)
            seen.add(state)
        self.state("initial", m.initial)
        for index, state in enumerate(m.terminal):
            self.state(f"terminal[{index}]", state)
        for name, role in m.roles.items():
            if role.members == "referee" and self.referee is None:
                self.say(f"roles.{name}.members", "the roster has no referee")
            if isinstance(role.members, list):
                for index, member in enumerate(role.members):
                    if member not in self.roster:
                        self.expect(
                            f"roles.{name}.members[{index}]",
                            f"an agent id of the roster ({_options(self.roster)})",
                            member,
                        )
        for key, entry in m.data.items():
            if key == "actor":
                self.say(f"data.{key}", "actor is reserved for the actor pointer")
            if entry.visibility == "owner" and entry.type == "set":
                self.expect(
                    f"data.{key}.type", "value (an owner-visibility key is per agent)", "set"
                )
        if m.actor is not None:
            self.role("actor.over", m.actor.over)
            for index, key in enumerate(m.actor.skip):
                self.set_key(f"actor.skip[{index}]", key)
        for index, name in enumerate(m.participant_effects):
            if name not in EFFECTS:
                self.expect(
                    f"participant_effects[{index}]", f"an effect ({_options(EFFECTS)})", name
                )
        for name, transition in m.transitions.items():
            base = f"transitions.{name}"
            for index, state in enumerate(transition.from_):
                self.state(
                    f"{base}.from[{index}]" if len(transition.from_) > 1 else f"{base}.from",
                    state,
                    "any",
                )
            self.state(f"{base}.to", transition.to, "same")
            self.role(f"{base}.by", transition.by)
            by_role = m.roles.get(transition.by)
            by_participants = by_role is not None and by_role.members != "referee"
            hidden = by_role is not None and by_role.visibility == "hidden"
            if hidden and transition.log != "referee":
                self.expect(
                    f"{base}.log",
                    f"referee (the role {transition.by} is hidden)",
                    transition.log,
                )
            public_log = transition.log == "public"
            for index, clause in enumerate(transition.guard):
                self.guard(f"{base}.guard[{index}]", clause, public_log=public_log)
            for index, clause in enumerate(transition.effects):
                self.effect(f"{base}.effects[{index}]", clause, by_participants=by_participants)
        if m.wake and self.turns:
            self.say(
                "wake", "wake rules and a turns block cannot be used together (use turns: null)"
            )
        for index, rule in enumerate(m.wake):
            base = f"wake[{index}]"
            if rule.role != "actor":
                self.role(f"{base}.role", rule.role)
                woken = m.roles.get(rule.role)
                if woken is not None and woken.visibility == "hidden":
                    self.expect(
                        f"{base}.role", "a public role (hidden roles cannot be woken)", rule.role
                    )
                if not rule.when and rule.after_s is None:
                    self.say(
                        base,
                        f"a wake rule for {rule.role} needs when or after_s "
                        "(only actor may be bare)",
                    )
            elif rule.after_s is not None:
                self.say(
                    f"{base}.after_s", "actor cannot take after_s; nudge a declared role instead"
                )
            elif m.actor is None:
                self.say(f"{base}.role", "waking actor needs an actor pointer (machine.actor)")
            if rule.after_s is not None and rule.after_s < AFTER_S_FLOOR:
                self.expect(f"{base}.after_s", f"at least {AFTER_S_FLOOR} seconds", rule.after_s)
            for part, clauses in (("when", rule.when), ("unless", rule.unless)):
                for position, clause in enumerate(clauses):
                    path = f"{base}.{part}[{position}]"
                    name = self.split(clause)[0]
                    if name in CALLER_GUARDS:
                        self.expect(
                            path,
                            "a guard that does not read the caller (a wake rule has no caller)",
                            name,
                        )
                        continue
                    self.guard(path, clause, public_log=False)
        return self.errors


def check_machine(
    machine: MachineDef,
    *,
    file: str,
    prefix: str,
    roster: list[str],
    referee: str | None,
    turns: bool,
) -> list[PackageError]:
    """Every load-time problem of a machine declaration, each at its own field."""
    checker = _Checker(
        machine, file=file, prefix=prefix, roster=roster, referee=referee, turns=turns
    )
    return checker.run()
