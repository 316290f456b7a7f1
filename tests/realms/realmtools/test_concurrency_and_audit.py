"""One writer per realm under concurrent calls, and an audit log without content."""

from __future__ import annotations

import asyncio
import logging

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from chronicle.kinds import Kind
from chronicle.models import Event

from .conftest import _decode, uds_client
from .machines import AUCTION

pytestmark = pytest.mark.timeout(90)


async def _one(agent, name, args):
    async with (
        uds_client(agent.path, agent.token) as http,
        streamable_http_client("http://realmtools/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return _decode(await session.call_tool(name, args))


def _together(*calls):
    async def go():
        return await asyncio.gather(*(_one(agent, name, args) for agent, name, args in calls))

    return asyncio.run(go())


def test_racing_acts_are_serialised_by_the_realm_lock(realms):
    realm = realms(spec={"mechanics": [{"kind": "state-machine", "machine": AUCTION}]})
    ref, orin = realms.agent(realm, "themis"), realms.agent(realm, "orin")
    ref.call("game_set", key="lot", value="vase")
    ref.call("game_act", transition="start", args={"first": "orin"})
    results = _together(*[(orin, "game_act", {"transition": "bid"}) for _ in range(6)])
    accepted = [r for r in results if "error" not in r]
    rejected = [r for r in results if r.get("error") == "rejected"]
    assert (len(accepted), len(rejected)) == (1, 5)
    games = [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.GAME)]
    assert [g["op"] for g in games].count("act") == 2  # start + the one bid
    assert ref.call("game_state")["data"]["bids_in"] == ["orin"]


def test_racing_submissions_leave_one_sealed_payload(realms):
    realm = realms()
    orin = realms.agent(realm, "orin")
    results = _together(
        *[(orin, "submit_sealed", {"round": "R1", "payload": str(n)}) for n in range(5)]
    )
    assert sum(r.startswith("Sealed") for r in results) == 1
    assert Event.objects.filter(realm_id=realm.realm_id, kind=Kind.SEALED_SUBMIT).count() == 1


def test_the_audit_log_records_shapes_never_content(realms, caplog):
    realm = realms()
    orin = realms.agent(realm, "orin")
    with caplog.at_level(logging.INFO, logger="realms.realmtools.audit"):
        orin.call("submit_sealed", round="R9", payload="paper-under-the-table")
        orin.call("remember", note="vela-always-bluffs")
        orin.call("recall")
        orin.call("send_private", to="vela", message="hello")
    lines = [r.getMessage() for r in caplog.records if r.name == "realms.realmtools.audit"]
    assert any("tool=submit_sealed" in line and "result=text[" in line for line in lines)
    assert any("tool=recall" in line and "result=dict[notes]" in line for line in lines)
    assert any("tool=send_private" in line and "result=error" in line for line in lines)
    assert all("agent=orin" in line and f"realm={realm.realm_id}" in line for line in lines)
    text = "\n".join(lines)
    for secret in ("paper-under-the-table", "vela-always-bluffs", orin.token):
        assert secret not in text
