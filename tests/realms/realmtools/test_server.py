"""The server's front door: tokens, the rebinding guard, per-caller tool lists."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import time

import httpx
import pytest

from realms.realmtools.identity import mint_token
from realms.realmtools.server import NO_TOKEN, RealmtoolsServer

from .conftest import PLAYERS, REFEREE, Agent, uds_client

pytestmark = pytest.mark.timeout(60)

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _post(server, token):
    async def go():
        async with uds_client(server.uds_path, token) as http:
            return await http.post("http://realmtools/mcp", json=INIT, headers=HEADERS)

    return asyncio.run(go())


def test_requests_without_a_valid_token_get_a_json_rpc_401(server):
    for token in (None, "garbage", mint_token("r", "a", "player", []) + "x"):
        response = _post(server, token)
        assert response.status_code == 401
        assert response.json()["error"]["message"] == NO_TOKEN
    assert _post(server, mint_token("r", "a", "player", [])).status_code == 200


def _raw(server, head: bytes, body: bytes) -> bytes:
    """Send bytes on the Unix socket as they are; the reply, or b"" once the peer closed."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(server.uds_path))
        # A server that answers early may close before it has read everything.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head + body)
            sock.shutdown(socket.SHUT_WR)
        return b"".join(iter(lambda: sock.recv(65536), b""))


def _head(token: str, length: int) -> bytes:
    return (
        "POST /mcp HTTP/1.1\r\nHost: realmtools\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\n"
        f"Authorization: Bearer {token}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def test_a_client_that_leaves_mid_request_is_no_crash_and_others_carry_on(server, caplog):
    token = mint_token("r", "a", "player", [])
    caplog.set_level(logging.WARNING)
    # Half a body, then the agent's side closes: what a sandbox stopped mid-call looks like.
    body = json.dumps(INIT).encode()
    _raw(server, _head(token, len(body) + 100), body)
    time.sleep(0.3)
    noise = [r for r in caplog.records if r.name.startswith("mcp") and r.levelno >= logging.ERROR]
    assert not noise, [r.getMessage() for r in noise]
    assert _post(server, token).status_code == 200


def test_a_request_body_over_the_limit_is_refused_before_it_is_parsed(server):
    token = mint_token("r", "a", "player", [])
    size = 4 * 1024 * 1024 + 1
    reply = _raw(server, _head(token, size), b"x" * size)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"request body over" in reply


def test_tcp_clients_must_name_a_loopback_host(server):
    token = mint_token("r", "a", "player", [])
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    with httpx.Client() as http:
        ok = http.post(server.url, json=INIT, headers=auth)
        assert ok.status_code == 200
        rebound = http.post(server.url, json=INIT, headers={**auth, "Host": "evil.example"})
        assert rebound.status_code == 421
        origin = http.post(server.url, json=INIT, headers={**auth, "Origin": "http://evil.example"})
        assert origin.status_code == 403


def test_a_token_for_another_realm_or_agent_lists_nothing_and_may_do_nothing(realms, server):
    realm = realms()
    stranger = Agent(server, mint_token(realm.realm_id, "mallory", "player", ["orin"]))
    assert stranger.tools() == set()
    assert "not an agent" in stranger.call("scoreboard")["error"]
    nowhere = Agent(server, mint_token("no-such-realm", "orin", "player", ["orin"]))
    assert nowhere.tools() == set()
    assert "does not exist" in nowhere.call("recall")["error"]
    # a player token claiming the referee's seat is refused: roles are re-checked
    imposter = Agent(server, mint_token(realm.realm_id, "orin", "referee", ["orin"]))
    assert "role does not match" in imposter.call("scoreboard")["error"]


BASE = {
    "reveal_status",
    "turn_status",
    "run_code",
    "remember",
    "recall",
    "scoreboard",
    "budget_status",
}
REFEREE_ONLY = {"reveal", "tally", "score", "penalize", "flag", "eliminate", "rule"}
MACHINE = {"game_state", "game_act", "game_declaration"}


def test_listing_hides_what_the_caller_may_not_call(realms):
    agents = [
        {"id": "orin", "tools": ["web_fetch"], "private_messaging": {"enabled": True}},
        {"id": "vela", "tools": ["web_fetch"]},
        {"id": "zed"},
        {**REFEREE},
    ]
    realm = realms(agents=agents)
    assert realms.agent(realm, "orin").tools() == BASE | {
        "submit_sealed",
        "send_private",
        "web_fetch",
    }
    # vela shares a DM room with orin (orin may write to anyone), and holds web_fetch only
    # while the token carries the grant too
    assert realms.agent(realm, "vela", grants=[]).tools() == BASE | {
        "submit_sealed",
        "send_private",
    }
    # zed's token claims a grant the realm never gave: still hidden
    assert "web_fetch" not in realms.agent(realm, "zed", grants=["web_fetch"]).tools()
    # orin may not write to the referee (no include_referee): the referee has no DM room
    assert realms.agent(realm, "themis").tools() == BASE | REFEREE_ONLY


def test_machine_tools_appear_only_in_machine_realms(realms):
    machine = {
        "roles": {"ref": {"members": "referee"}, "p": {"members": "participants"}},
        "states": ["a", "b"],
        "initial": "a",
        "transitions": {"go": {"from": "a", "to": "b", "by": "ref"}},
        "referee_reads_commons": True,
    }
    realm = realms(spec={"mechanics": [{"kind": "state-machine", "machine": machine}]})
    players = [{"id": p["id"]} for p in PLAYERS]
    assert realms.agent(realm, "orin").tools() >= MACHINE
    assert "game_set" not in realms.agent(realm, "orin").tools()
    referee_tools = realms.agent(realm, "themis").tools()
    assert MACHINE | {"game_set", "table_talk"} <= referee_tools

    plain = realms(agents=[*players, REFEREE])
    assert not (MACHINE | {"game_set", "table_talk"}) & realms.agent(plain, "themis").tools()
    assert realms.agent(plain, "orin").call("game_state") == {"error": "no machine declared"}


def test_the_server_restarts_on_the_same_socket_and_clients_carry_on(realms, tmp_path):
    realm = realms()
    path = tmp_path / "rt.sock"
    first = RealmtoolsServer(uds_path=path)
    first.start()
    try:
        agent = Agent(first, realms.agent(realm, "orin").token)
        assert agent.call("remember", note="before").startswith("Noted")
        with pytest.raises(RuntimeError, match="another realmtools server"):
            RealmtoolsServer(uds_path=path).start()
    finally:
        first.stop()
    second = RealmtoolsServer(uds_path=path)
    second.start()
    try:
        assert agent.call("recall") == {"notes": ["before"]}
    finally:
        second.stop()
    assert not path.exists()
