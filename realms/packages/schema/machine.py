"""The shape of a state-machine declaration (``mechanics[].machine``).

Only shapes live here; every rule that relates one part of a declaration to another (states,
roles, keys, authority, visibility, wakes) is checked in ``realms.packages.machine`` so that
all problems are reported at once, each at its own field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from realms.packages.schema.common import Strict, fail


def _clause(value: Any) -> Any:
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1 and isinstance(next(iter(value)), str):
        return value
    fail("a clause name or an object with exactly one key")


def _members(value: Any) -> Any:
    if value in ("referee", "participants"):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    fail('"referee", "participants" or a list of agent ids')


def _states(value: Any) -> Any:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return value
    fail('a state, a list of states or "any"')


_CLAUSE_SCHEMA = {
    "anyOf": [
        {"type": "string"},
        {"type": "object", "minProperties": 1, "maxProperties": 1},
    ]
}

# A guard or effect: a bare name (``"advance_actor"``) or ``{name: argument}``.
Clause = Annotated[
    str | dict[str, Any],
    BeforeValidator(_clause),
    WithJsonSchema(_CLAUSE_SCHEMA),
]
Members = Annotated[
    str | list[str],
    BeforeValidator(_members),
    WithJsonSchema(
        {
            "anyOf": [
                {"enum": ["referee", "participants"]},
                {"type": "array", "items": {"type": "string"}},
            ]
        }
    ),
]
FromStates = Annotated[
    list[str],
    BeforeValidator(_states),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}),
]


class RoleDef(Strict):
    members: Members
    visibility: Literal["public", "hidden"] = "public"


class DataDef(Strict):
    visibility: Literal["public", "owner", "referee"]
    type: Literal["value", "set"] = "value"


class PointerDef(Strict):
    over: str
    skip: list[str] = Field(default_factory=list)


class TransitionDef(Strict):
    from_: FromStates = Field(alias="from")
    to: str
    by: str
    guard: list[Clause] = Field(default_factory=list)
    effects: list[Clause] = Field(default_factory=list)
    log: Literal["public", "referee"] = "public"


class WakeRule(Strict):
    role: str
    when: list[Clause] = Field(default_factory=list)
    unless: list[Clause] = Field(default_factory=list)
    after_s: int | None = None


class MachineDef(Strict):
    """A declared game-state machine."""

    roles: dict[str, RoleDef]
    states: list[str] = Field(min_length=1)
    initial: str
    terminal: list[str] = Field(default_factory=list)
    actor: PointerDef | None = None
    participant_effects: list[str] = Field(default_factory=list)
    referee_reads_commons: bool = False
    data: dict[str, DataDef] = Field(default_factory=dict)
    transitions: dict[str, TransitionDef]
    wake: list[WakeRule] = Field(default_factory=list)

    def is_set(self, key: Any) -> bool:
        entry = self.data.get(key) if isinstance(key, str) else None
        return entry is not None and entry.type == "set"
