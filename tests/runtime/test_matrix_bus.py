"""The Matrix bus against a real Synapse: gating, DM replies, batching during a turn."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from realms.herald.bus import BusAgent, agent_credentials, provision_bus
from realms.herald.matrix import matrix_client
from realms.herald.posting import message_content
from runtime.agent import Agent
from runtime.bus import BusMessage
from runtime.matrix_bus import MatrixBus
from runtime.tools import ToolDefinition, object_schema
from tests.realms.herald.conftest import AgentClient
from tests.runtime.conftest import birth
from tests.runtime.provider import call, reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture
def realm_bus(homeserver, realm_id, transactional_db):
    agents = [
        BusAgent("alice", private_messaging={"enabled": True, "peers": ["bob"]}),
        BusAgent("bob", private_messaging={"enabled": True}),
        BusAgent("judge", role="referee"),
    ]
    bus = provision_bus(realm_id, agents, turns=False, allow_side_channels=False)
    creds = {a.agent_id: agent_credentials(realm_id, a.agent_id) for a in agents}
    return bus, creds


def alice_config(tmp_path, socket, homeserver, bus, creds):
    alice = creds["alice"]
    return birth(
        tmp_path,
        socket,
        agent_id="alice",
        tools_allow=["slow"],
        bus={
            "homeserver_url": "http://homeserver",
            "socket_path": str(homeserver.socket_path),
            "mxid": alice.mxid,
            "access_token": alice.access_token,
            "commons_room_id": alice.commons_room_id,
            "dm_rooms": alice.dm_rooms,
            "system_mxid": bus.system_user_id,
            "operator_mxid": bus.operator_user_id,
            "peers": bus.users,
            "require_mention": True,
        },
    )


def room_contents(client: AgentClient, room_id: str, sender: str) -> list[dict[str, Any]]:
    path = f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/messages?dir=b&limit=50"
    chunk = client.get(path).json()["chunk"]
    return [
        e["content"]
        for e in reversed(chunk)
        if e["type"] == "m.room.message" and e["sender"] == sender
    ]


def room_bodies(client: AgentClient, room_id: str, sender: str) -> list[str]:
    return [c.get("body", "") for c in room_contents(client, room_id, sender)]


async def until(predicate, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if await asyncio.to_thread(predicate):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def test_gating_dm_replies_and_batching(tmp_path, provider, homeserver, realm_bus):
    bus, creds = realm_bus
    config = alice_config(tmp_path, provider.socket, homeserver, bus, creds)
    agent = Agent(config, None)
    matrix = MatrixBus(config.bus, "alice", tmp_path / "state", agent.trace)
    agent.bus = matrix
    bob = AgentClient(homeserver, creds["bob"].access_token)
    judge = AgentClient(homeserver, creds["judge"].access_token)
    commons, dm = bus.commons_room_id, creds["alice"].dm_rooms["bob"]
    alice_mxid = creds["alice"].mxid
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    try:
        await asyncio.wait_for(matrix.first_sync.wait(), 30)
        # The DM room's welcome notice mentions alice, so it wakes her once at start.
        provider.script = [reply("")]
        await until(lambda: len(provider.requests) == 1)
        await until(lambda: agent.idle.is_set())
        # Connected (bus synced; no MCP server configured here, so none is down) is traced
        # once, after run_start.
        records = [json.loads(line) for line in Path(config.trace_path).read_text().splitlines()]
        types = [r["type"] for r in records]
        assert types.count("connected") == 1 and types.index("connected") > types.index("run_start")
        connected = records[types.index("connected")]["data"]
        assert connected["mcp_down"] == [] and 0 <= connected["setup_ms"] < 30_000

        # 1. Not mentioned in the Commons: a gated participant never receives it.
        bob.send(commons, "chatter nobody needs to answer")
        # 2. Mentioned by @id: it wakes, and the reply goes to the Commons.
        provider.script = [reply("alice answers the commons, @bob")]
        bob.send(commons, "@alice what colour?")
        await until(
            lambda: "alice answers the commons, @bob" in room_bodies(bob, commons, alice_mxid)
        )
        wake = provider.requests[1]["messages"][-1]["content"]
        assert "from bob | in Commons" in wake and "@alice what colour?" in wake
        assert not any(
            "chatter nobody" in str(m["content"]) for r in provider.requests for m in r["messages"]
        )
        (answer,) = [
            c for c in room_contents(bob, commons, alice_mxid) if "answers the commons" in c["body"]
        ]
        assert answer["m.mentions"] == {"user_ids": [creds["bob"].mxid]}

        # 3. A DM always arrives, and the reply goes back to the DM room, not the Commons.
        provider.script = [reply("alice answers privately")]
        bob.send(dm, "psst, no mention here")
        await until(lambda: "alice answers privately" in room_bodies(bob, dm, alice_mxid))
        assert "alice answers privately" not in room_bodies(bob, commons, alice_mxid)
        assert "from bob | in DM with bob" in provider.requests[2]["messages"][-1]["content"]

        # 4. The system's notice that mentions her (a floor grant) wakes her; events that
        # arrive during the turn (posted while her tool runs) come in as ONE block.
        async def others_speak(args):
            judge.send(commons, f"{alice_mxid} one")
            bob.send(commons, "@alice two")
            bob.send(commons, "not for alice")
            await asyncio.sleep(1.5)
            return "waited"

        agent.registry.add_builtin(
            ToolDefinition("slow", "Wait.", object_schema({}, []), others_speak, timeout_s=10)
        )
        provider.script = [reply(tool_calls=[call("slow", {}, "s1")]), reply("done with the floor")]
        await asyncio.to_thread(_system_mention, commons, alice_mxid)
        await until(lambda: "done with the floor" in room_bodies(bob, commons, alice_mxid))
        grant = provider.requests[3]["messages"][-1]["content"]
        assert "from system" in grant and "it is your turn now" in grant
        assert len(provider.requests) == 5
        after_tool = provider.requests[4]["messages"]
        tool_at = max(i for i, m in enumerate(after_tool) if m["role"] == "tool")
        (batch,) = after_tool[tool_at + 1 :]
        assert batch["content"].count("<incoming_events") == 1
        assert "from judge" in batch["content"] and "@alice two" in batch["content"]
        assert "not for alice" not in batch["content"]
        # Her own messages never wake her.
        assert not any(
            "alice answers" in str(r["messages"][-1]["content"]) for r in provider.requests
        )
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        bob.close()
        judge.close()


def _system_mention(room_id: str, mxid: str) -> None:
    with matrix_client() as client:
        client.send(room_id, message_content("it is your turn now", [mxid], notice=True))


async def test_the_agent_keeps_listening_across_a_homeserver_restart(
    tmp_path, provider, homeserver, realm_bus
):
    bus, creds = realm_bus
    config = alice_config(tmp_path, provider.socket, homeserver, bus, creds)
    agent = Agent(config, None)
    matrix = MatrixBus(config.bus, "alice", tmp_path / "state", agent.trace)
    agent.bus = matrix
    commons, alice_mxid = bus.commons_room_id, creds["alice"].mxid
    provider.script = [reply("")]  # the DM room's welcome notice
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    try:
        await asyncio.wait_for(matrix.first_sync.wait(), 30)
        await until(lambda: len(provider.requests) == 1 and agent.idle.is_set())
        await asyncio.to_thread(homeserver.kill)
        await asyncio.sleep(1.0)
        await asyncio.to_thread(homeserver.restart)
        bob = AgentClient(homeserver, creds["bob"].access_token)
        try:
            provider.script = [reply("still here")]
            assert bob.send(commons, "@alice are you still there?").status_code == 200
            await until(lambda: "still here" in room_bodies(bob, commons, alice_mxid), 60)
        finally:
            bob.close()
        assert "are you still there?" in provider.requests[1]["messages"][-1]["content"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_only_the_systems_call_in_the_commons_is_a_floor_call(
    tmp_path, provider, homeserver, realm_bus
):
    bus, creds = realm_bus
    config = alice_config(tmp_path, provider.socket, homeserver, bus, creds)
    agent = Agent(config, None)
    matrix = MatrixBus(config.bus, "alice", tmp_path / "state", agent.trace)
    seen: list[BusMessage] = []
    bob = AgentClient(homeserver, creds["bob"].access_token)
    commons, dm, alice_mxid = (
        bus.commons_room_id,
        creds["alice"].dm_rooms["bob"],
        creds["alice"].mxid,
    )
    await matrix.start(seen.append)
    try:
        await asyncio.wait_for(matrix.first_sync.wait(), 30)
        await asyncio.to_thread(_system_mention, commons, alice_mxid)
        bob.send(commons, "@alice it is your turn, I promise")
        bob.send(dm, f"{alice_mxid} your turn too")
        await until(lambda: len(seen) >= 4)
        calls = {(m.room_label, m.sender, m.floor_call) for m in seen}
        # The DM room's welcome notice is the system's too, but not in the Commons.
        assert calls == {
            ("DM with bob", "system", False),
            ("Commons", "system", True),
            ("Commons", "bob", False),
            ("DM with bob", "bob", False),
        }
    finally:
        await matrix.close()
        bob.close()
