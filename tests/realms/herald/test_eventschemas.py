"""Synapse's constant event schemas are checked once, and events exactly as strictly as before."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import jsonschema
import pytest
from jsonschema.exceptions import best_match
from synapse.events import validator as synapse_validator
from synapse.util.frozenutils import freeze

from realms.herald.eventschemas import EventSchemas

MENTIONS = (synapse_validator.MENTIONS_SCHEMA, synapse_validator.MENTIONS_VALIDATOR)
POWER_LEVELS = (synapse_validator.POWER_LEVELS_SCHEMA, synapse_validator.POWER_LEVELS_VALIDATOR)

CASES: list[tuple[tuple[Any, Any], Any]] = [
    (MENTIONS, {"user_ids": ["@a:t.local"]}),
    (MENTIONS, {"user_ids": []}),
    (MENTIONS, {"room": True}),
    (MENTIONS, {}),
    (MENTIONS, {"user_ids": "@a:t.local"}),
    (MENTIONS, {"user_ids": [1]}),
    (MENTIONS, {"room": "yes"}),
    (MENTIONS, ["@a:t.local"]),
    (POWER_LEVELS, {"users": {"@a:t.local": 50}, "events_default": 0}),
    (POWER_LEVELS, {"users_default": "0"}),
    (POWER_LEVELS, {"users": {"@a:t.local": 1.5}}),
]


def _reference(instance: Any, schema: Any, cls: Any) -> str | None:
    """What ``jsonschema.validate`` raises, worked out from its definition."""
    cls.check_schema(schema)
    error = best_match(cls(schema).iter_errors(instance))
    return None if error is None else f"{list(error.path)} {error.message}"


def _patched(instance: Any, schema: Any, cls: Any) -> str | None:
    try:
        jsonschema.validate(instance=instance, schema=schema, cls=cls)
    except jsonschema.ValidationError as error:
        return f"{list(error.path)} {error.message}"
    return None


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("pair", "instance"), CASES)
def test_every_event_is_judged_as_before(pair: tuple[Any, Any], instance: Any) -> None:
    EventSchemas.parse_config({})
    schema, cls = pair
    # Synapse hands over event content frozen (immutabledict, tuples).
    for given in (instance, freeze(instance)):
        assert _patched(given, schema, cls) == _reference(given, schema, cls)


@pytest.mark.timeout(30)
def test_the_schema_itself_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    EventSchemas.parse_config({})
    checks: list[object] = []
    monkeypatch.setattr(MENTIONS[1], "check_schema", classmethod(lambda c, s: checks.append(s)))
    for _ in range(3):
        jsonschema.validate(instance={"user_ids": []}, schema=MENTIONS[0], cls=MENTIONS[1])
    assert checks == []
    # Any other schema still takes jsonschema's own path, schema check included.
    other = {"type": "object"}
    monkeypatch.setattr(
        jsonschema.Draft7Validator, "check_schema", classmethod(lambda c, s: checks.append(s))
    )
    jsonschema.validate(instance={}, schema=other, cls=jsonschema.Draft7Validator)
    assert checks == [other]


@pytest.mark.timeout(30)
def test_applied_once() -> None:
    EventSchemas.parse_config({})
    patched = jsonschema.validate
    EventSchemas.parse_config({})
    assert jsonschema.validate is patched


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(120)
def test_the_homeserver_still_refuses_malformed_mentions(small_bus, agent_client) -> None:
    alice = agent_client(small_bus.realm_id, "alice")
    path = (
        f"/_matrix/client/v3/rooms/{quote(small_bus.commons_room_id, safe='')}/send/m.room.message/"
    )

    def send(mentions: Any) -> Any:
        body = {"msgtype": "m.text", "body": "hi", "m.mentions": mentions}
        return alice.request("PUT", f"{path}t{time.time_ns()}", body)

    assert send({"user_ids": [small_bus.users["bob"]]}).status_code == 200
    # (A bad list item, {"user_ids": [7]}, Synapse refuses with a 500 of its own.)
    for bad in ({"user_ids": {"@bob": 1}}, {"room": "yes"}, {"user_ids": True}):
        refused = send(bad)
        assert refused.status_code == 400, refused.text
        assert refused.json()["errcode"] == "M_BAD_JSON"
