"""Check Synapse's constant event-content schemas once, not on every event: a Synapse module.

Synapse validates the ``m.mentions`` of every message it is sent (and the content of every
power-levels event) with ``jsonschema.validate``, which first checks the *schema* against
the JSON Schema meta-schema and builds a new validator, then checks the event. The schema
is a constant of ``synapse.events.validator``: re-checking it is about 0.9 ms per message,
on the homeserver's single reactor thread (``bench/bus.py``, py-spy: ~8 % of the homeserver
under saturation, because the runtime sends ``m.mentions`` with every message).

Here each of those two schemas is checked once, when Synapse parses its config, and its
validator kept. Every event is still checked against the same schema, by the same
validator class, with the same first error raised (``best_match``, as
``jsonschema.validate`` does): only the repeated check of the unchanged schema goes. Any
other call of ``jsonschema.validate`` takes the original path untouched.

Synapse imports this module in its own process: it must not import Django.
"""

from __future__ import annotations

from typing import Any

import jsonschema
from jsonschema.exceptions import best_match
from synapse.events import validator as synapse_validator

from realms.herald.patchmodule import ConfigTimePatch

APPLIED = "_bearpit_checked_once"


def _prebuilt() -> dict[int, tuple[Any, type[Any], Any]]:
    """Schema id → (the schema, its validator class, a validator built on it)."""
    built = {}
    for schema, cls in (
        (synapse_validator.MENTIONS_SCHEMA, synapse_validator.MENTIONS_VALIDATOR),
        (synapse_validator.POWER_LEVELS_SCHEMA, synapse_validator.POWER_LEVELS_VALIDATOR),
    ):
        cls.check_schema(schema)  # the check every call made, made once
        built[id(schema)] = (schema, cls, cls(schema))
    return built


def apply() -> None:
    """Make ``jsonschema.validate`` reuse a checked validator for Synapse's two schemas."""
    if getattr(jsonschema.validate, APPLIED, False):
        return
    original = jsonschema.validate
    prebuilt = _prebuilt()

    def validate(instance: Any, schema: Any, cls: Any = None, *args: Any, **kwargs: Any) -> None:
        hit = prebuilt.get(id(schema))
        # The very schema object and class checked at start-up, nothing else passed: the
        # kept schema is referenced here, so its id cannot be reused by another object.
        if hit is None or hit[0] is not schema or hit[1] is not cls or args or kwargs:
            original(instance, schema, cls, *args, **kwargs)
            return
        error = best_match(hit[2].iter_errors(instance))
        if error is not None:
            raise error

    setattr(validate, APPLIED, True)
    jsonschema.validate = validate


class EventSchemas(ConfigTimePatch):
    """The module Synapse loads."""

    patch = staticmethod(apply)
