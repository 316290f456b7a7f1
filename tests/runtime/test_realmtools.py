"""The runtime against the real realmtools MCP server: the tools a player is shown, a call."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.realmtools.identity import mint_token
from runtime.birth import PromptInputs, RosterEntry
from runtime.loop import Termination
from runtime.mcp_client import McpHub
from runtime.prompt import system_prompt
from tests.realms.realmtools.conftest import RealmMaker, realms, server  # noqa: F401
from tests.runtime.conftest import birth, make_loop
from tests.runtime.provider import call, reply
from tests.runtime.tools_for_tests import toolcheck_turn_wake

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

GOALS = ["Pass the relay word on correctly."]
TOOLCHECK_SPEC = {
    "goals": GOALS,
    "turns": {"policy": "one-at-a-time", "min_rounds_before_verdict": 1},
    "referee_opens": True,
    "provide_tools": True,
}
AGENTS = [
    {"id": "ping", "role": "participant"},
    {"id": "pong", "role": "participant"},
    {"id": "umpire", "role": "referee"},
]


@pytest.fixture
def pong_token(realms: RealmMaker) -> tuple[str, str, str]:  # noqa: F811
    realm = realms(spec=TOOLCHECK_SPEC, agents=AGENTS)
    token = mint_token(realm.realm_id, "pong", "player", ["ping", "pong"], [])
    assert realms.server.uds_path is not None
    return realm.realm_id, token, str(realms.server.uds_path)


def realmtools_config(tmp_path: Any, provider: Any, token: str, sock: str, **extra: Any) -> Any:
    return birth(
        tmp_path,
        provider.socket,
        mcp_servers=[
            {
                "name": "realmtools",
                "url": "http://realmtools/mcp",
                "socket_path": sock,
                "bearer_token": token,
            }
        ],
        **extra,
    )


async def test_a_turn_submits_a_sealed_word_through_realmtools(tmp_path, provider, pong_token):
    realm_id, token, sock = pong_token
    provider.script = [
        reply(tool_calls=[call("submit_sealed", {"round": "R1", "payload": "teal"}, "s1")]),
        reply("blue -> teal"),
    ]
    config = realmtools_config(tmp_path, provider, token, sock)
    loop = make_loop(config)
    hub = McpHub(config.mcp_servers, loop.registry, loop.trace)
    assert await hub.start(10) == []
    try:
        result = await loop.run_turn("@pong it is your turn")
    finally:
        await hub.close()
    assert result.termination is Termination.COMPLETED
    assert "submit_sealed" in [t["function"]["name"] for t in provider.requests[0]["tools"]]
    tool_result = next(m for m in provider.requests[1]["messages"] if m["role"] == "tool")
    assert tool_result["content"].startswith("Sealed for round R1")
    sealed = [
        e.payload async for e in Event.objects.filter(realm_id=realm_id, kind=Kind.SEALED_SUBMIT)
    ]
    assert [p["agent"] for p in sealed] == ["pong"]
    assert token not in (tmp_path / "home" / ".bearpit" / "trace.jsonl").read_text()


async def test_toolcheck_players_first_request_with_the_real_tools(tmp_path, provider, pong_token):
    _, token, sock = pong_token
    inputs = PromptInputs(
        agent_id="pong",
        display_name="Pong",
        mxid="@bp-pong:bearpit.local",
        persona=(
            "# Pong\n\nYou are Pong, the second runner in a short word relay. You read the "
            "conversation you are handed carefully, because your line must start with the "
            "word Ping just passed on. You keep to one line."
        ),
        roster=[
            RosterEntry(id="ping", name="Ping", description="First runner of the relay."),
            RosterEntry(id="pong", name="Pong", description="Second runner of the relay."),
            RosterEntry(id="umpire", name="Umpire", role="referee", description="Rules."),
        ],
        realm_goals=GOALS,
        guidelines=(
            "This realm is a one-round word relay that checks the platform works.\nWhen the "
            "floor is yours, do these two things in this order:\n1. Call submit_sealed with "
            "round set to the text R1 and payload set to one new colour word that nobody has "
            "used yet.\n2. Post one line and nothing else: '<previous word> -> <your word>'."
            "\nTool calls cost nothing and do not end your turn; your posted line does."
        ),
        restrictions="Do not post more than one line on your turn.",
        budget_note="your model spend is capped at $0.50; when it is spent your calls fail.",
    )
    config = realmtools_config(
        tmp_path, provider, token, sock, system_prompt=None, prompt=inputs.model_dump()
    )
    loop = make_loop(config)
    hub = McpHub(config.mcp_servers, loop.registry, loop.trace)
    await hub.start(10)
    await hub.close()
    tools = loop.registry.schemas()
    assert "submit_sealed" in loop.registry.names()
    assert "reveal" not in loop.registry.names()  # the server hides referee tools
    prompt = system_prompt(config, loop.registry.names(), [])
    wake = toolcheck_turn_wake()
    request = json.dumps(
        {
            "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": wake}],
            "tools": tools,
        }
    )
    estimate = len(request) / 4  # chars/4 over-counts JSON, so this is an upper estimate
    assert estimate <= 3000, estimate
