from __future__ import annotations

import asyncio

import pytest

from runtime.birth import McpServerSettings
from runtime.mcp_client import McpHub, exposed_name
from runtime.tools import ToolCall, ToolRegistry
from runtime.trace import Redactor, TraceWriter
from tests.runtime import mcp_server
from tests.runtime.provider import serve

pytestmark = pytest.mark.timeout(60)


def hub_for(tmp_path, sock, **settings):
    registry = ToolRegistry(None, 30)
    trace = TraceWriter(tmp_path / "trace.jsonl", "run", "pong", Redactor([mcp_server.TOKEN]))
    config = McpServerSettings(
        name="realmtools",
        url="http://mcp/mcp",
        socket_path=str(sock),
        bearer_token=mcp_server.TOKEN,
        **settings,
    )
    return McpHub([config], registry, trace), registry, trace


async def call(registry: ToolRegistry, name: str, **arguments):
    return await registry.dispatch(ToolCall("c", name, "", arguments))


async def test_list_and_call_over_a_unix_socket(tmp_path, short_tmp):
    calls: list[str] = []
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build(calls), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock, exclude=["fails"])
        assert await hub.start(10) == []
        # Bare names, as scenarios tell agents; the excluded tool is not offered.
        assert registry.names() == ["slow", "submit_sealed", "unlock"]
        result = await call(registry, "submit_sealed", round="R1", payload="teal")
        assert result.output == "sealed for R1"
        assert calls == ["submit_sealed:R1:teal"]
        bad = await call(registry, "submit_sealed", round="R1")
        assert bad.error_kind == "invalid_arguments" and "payload" in bad.output
        await hub.close()


async def test_tool_errors_and_timeouts_fail_only_that_call(tmp_path, short_tmp):
    calls: list[str] = []
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build(calls), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock, call_timeout_s=0.5)
        await hub.start(10)
        failed = await call(registry, "fails")
        assert failed.error_kind == "tool_error" and "no such round" in failed.output
        timed_out = await call(registry, "slow", seconds=3)
        assert timed_out.error_kind == "timeout"
        # The session survives: the next call on the same server works, tools stay listed.
        ok = await call(registry, "submit_sealed", round="R2", payload="x")
        assert ok.output == "sealed for R2"
        assert "slow" in registry.names()
        assert hub.servers["realmtools"].connects == 1
        await hub.close()


async def test_list_changed_relists(tmp_path, short_tmp):
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build([]), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock)
        await hub.start(10)
        assert "bonus" not in registry.names()
        assert (await call(registry, "unlock")).output == "unlocked"
        for _ in range(100):
            if "bonus" in registry.names():
                break
            await asyncio.sleep(0.05)
        assert (await call(registry, "bonus")).output == "bonus!"
        await hub.close()


async def test_server_down_then_back(tmp_path, short_tmp):
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build([]), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock)
        await hub.start(10)
    # The server is gone: calls fail with a clear message, the tools stay listed.
    down = await call(registry, "submit_sealed", round="R1", payload="a")
    assert down.error_kind == "unavailable"
    assert down.output == "Error: server realmtools unavailable, retry later"
    assert "submit_sealed" in registry.names()
    async with serve(mcp_server.build([]), uds=sock, lifespan="on"):
        result = None
        for _ in range(100):
            result = await call(registry, "submit_sealed", round="R1", payload="a")
            if result.outcome == "success":
                break
            await asyncio.sleep(0.1)
        assert result is not None and result.output == "sealed for R1"
        await hub.close()
    states = (tmp_path / "trace.jsonl").read_text()
    assert '"state": "down"' in states and '"state": "up"' in states
    assert mcp_server.TOKEN not in states


async def test_a_wake_reconnects_a_down_server_without_waiting_out_its_backoff(tmp_path, short_tmp):
    """A platform restart leaves the server's backoff long; ``ensure_up`` (called at each
    wake) retries at once, so the woken agent has its tools for that turn."""
    sock = short_tmp / "mcp.sock"
    hub, registry, _ = hub_for(tmp_path, sock)
    assert await hub.start(2) == ["realmtools"]
    trace = tmp_path / "trace.jsonl"
    for _ in range(200):  # until the next retry is 4 s away
        if '"retry_in_s": 4.0' in trace.read_text():
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the backoff never reached 4 s")
    started = asyncio.get_running_loop().time()
    assert await hub.ensure_up(0.6) == ["realmtools"], "nobody serves it yet"
    assert asyncio.get_running_loop().time() - started >= 0.6
    async with serve(mcp_server.build([]), uds=sock, lifespan="on"):
        started = asyncio.get_running_loop().time()
        assert await hub.ensure_up(10) == []
        assert asyncio.get_running_loop().time() - started < 2.5, "it waited out the backoff"
        assert "submit_sealed" in registry.names()
        assert (await call(registry, "submit_sealed", round="R1", payload="a")).outcome == (
            "success"
        )
        await hub.close()


async def test_a_server_that_never_answers_is_reported_unavailable(tmp_path, short_tmp):
    hub, _, _ = hub_for(tmp_path, short_tmp / "nobody.sock")
    assert await hub.start(2) == ["realmtools"]
    await hub.close()


async def test_wrong_token_is_refused(tmp_path, short_tmp):
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build([]), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock)
        hub.servers["realmtools"].settings = hub.servers["realmtools"].settings.model_copy(
            update={"bearer_token": "wrong-token-xyz"}
        )
        assert await hub.start(3) == ["realmtools"]
        assert registry.names() == []
        trace = (tmp_path / "trace.jsonl").read_text()
        assert "401" in trace or "bad token" in trace
        await hub.close()


def test_exposed_names_are_sanitised_and_short():
    assert exposed_name("realm tools", "a.b") == "mcp__realm_tools__a_b"
    long = exposed_name("s" * 30, "t" * 60)
    assert len(long) == 64


async def test_a_stateful_server_announces_new_tools_on_its_own_stream(tmp_path, short_tmp):
    sock = short_tmp / "mcp.sock"
    async with serve(mcp_server.build([], stateful=True), uds=sock, lifespan="on"):
        hub, registry, _ = hub_for(tmp_path, sock)
        assert await hub.start(10) == []
        assert "extra" not in registry.names()
        assert (await call(registry, "unlock_quietly")).output == "unlocked quietly"
        for _ in range(100):
            if "extra" in registry.names():
                break
            await asyncio.sleep(0.05)
        assert (await call(registry, "extra")).output == "extra!"
        # Calls and the event stream share one session: nothing reconnected on the way.
        assert hub.servers["realmtools"].connects == 1
        await hub.close()
