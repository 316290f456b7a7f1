"""Agent-written values are checked before anything reaches the Chronicle.

A NUL, an unpaired surrogate, a value nested too deep or too large is refused with a
tool error naming the argument, and nothing is recorded: the Chronicle is append-only,
so a bad value stored once would break the realm's pages for good.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.values import MAX_DEPTH, MAX_VALUE_BYTES
from realms.realmtools.server import RealmtoolsServer

from .conftest import uds_client
from .machines import AUCTION

pytestmark = pytest.mark.timeout(60)

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def raw_call(server: RealmtoolsServer, agent: Any, name: str, arguments_json: str) -> str:
    """One tools/call sent as JSON text, so a lone surrogate arrives exactly as written."""
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        f'"params": {{"name": "{name}", "arguments": {arguments_json}}}}}'
    )

    async def go() -> Any:
        assert server.uds_path is not None
        async with uds_client(server.uds_path, agent.token) as http:
            return await http.post("http://realmtools/mcp", content=body, headers=HEADERS)

    response = asyncio.run(go())
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    return json.dumps(result)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


def _kinds(realm) -> set[str]:
    return set(Event.objects.filter(realm_id=realm.realm_id).values_list("kind", flat=True))


@pytest.mark.parametrize(
    ("tool", "who", "arguments", "where", "what"),
    [
        ("remember", "orin", '{"note": "a\\u0000b"}', "arguments.note", "NUL"),
        ("remember", "orin", '{"note": "a\\udc80b"}', "arguments.note", "surrogate U+DC80"),
        (
            "submit_sealed",
            "orin",
            '{"round": "R1", "payload": "rock\\ud83d"}',
            "arguments.payload",
            "surrogate",
        ),
        (
            "submit_sealed",
            "orin",
            '{"round": "R\\u00001", "payload": "x"}',
            "arguments.round",
            "NUL",
        ),
        (
            "score",
            "themis",
            '{"agent": "orin", "delta": 1, "reason": "good\\u0000"}',
            "arguments.reason",
            "NUL",
        ),
        (
            "rule",
            "themis",
            '{"outcome": "orin wins", "reasons": ["fair", "b\\udfff"]}',
            "arguments.reasons[1]",
            "surrogate",
        ),
        (
            "tally",
            "themis",
            '{"round": "R1", "ruleset": "plurality", "config": ' + json.dumps(_nested(40)) + "}",
            "arguments.config",
            f"nested deeper than {MAX_DEPTH}",
        ),
        (
            "tally",
            "themis",
            '{"round": "R1", "ruleset": "plurality", "config": {"x": "'
            + "y" * (MAX_VALUE_BYTES + 1)
            + '"}}',
            "arguments",
            f"at most {MAX_VALUE_BYTES}",
        ),
        (
            "tally",
            "themis",
            '{"round": "R1", "ruleset": "plurality", "config": {"a\\u0000": 1}}',
            "arguments.config",
            "NUL",
        ),
    ],
)
def test_a_bad_agent_value_is_a_located_tool_error_and_nothing_is_chronicled(
    realms, server, tool, who, arguments, where, what
):
    realm = realms()
    before = _kinds(realm)
    answer = raw_call(server, realms.agent(realm, who), tool, arguments)
    assert where in answer and what in answer, answer
    assert "error" in answer
    assert _kinds(realm) == before


def test_machine_args_and_values_are_checked_too(realms, server):
    realm = realms(spec={"mechanics": [{"kind": "state-machine", "machine": AUCTION}]})
    ref = realms.agent(realm, "themis")
    ref.call("game_state")  # chronicles the MACHINE event
    before = Event.objects.filter(realm_id=realm.realm_id).count()
    answer = raw_call(server, ref, "game_set", '{"key": "lot", "value": "va\\u0000se"}')
    assert "arguments.value" in answer and "NUL" in answer, answer
    deep = json.dumps(_nested(MAX_DEPTH + 5))
    answer = raw_call(server, ref, "game_act", '{"transition": "start", "args": ' + deep + "}")
    assert "arguments.args" in answer and "nested deeper" in answer, answer
    assert Event.objects.filter(realm_id=realm.realm_id).count() == before


def test_good_values_still_pass(realms, server):
    realm = realms()
    orin = realms.agent(realm, "orin")
    answer = raw_call(server, orin, "remember", '{"note": "caf\\u00e9 \\ud83d\\ude00 ok"}')
    assert "error" not in answer, answer
    notes = [
        e.payload["text"] for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.NOTE)
    ]
    assert notes == ["café 😀 ok"]
