from __future__ import annotations

import pytest

from tests.runtime.conftest import VIRTUAL_KEY, birth, make_loop, trace_events
from tests.runtime.provider import call, reply
from tests.runtime.tools_for_tests import ALL, ALLOW

pytestmark = pytest.mark.timeout(30)

BUS_TOKEN = "syt_cG9uZw_bustoken_0123456789"
MCP_TOKEN = "rt.mcp-bearer-token-abcdef012345"


async def test_trace_and_transcript_never_hold_secrets(tmp_path, provider):
    leaky = f"key {VIRTUAL_KEY} token {BUS_TOKEN} and Authorization: Bearer abcdefghijklmnop123"
    provider.script = [
        reply(f"my key is {VIRTUAL_KEY}", tool_calls=[call("echo", {"text": leaky}, "a")]),
        reply(f"done {MCP_TOKEN}"),
    ]
    config = birth(
        tmp_path,
        provider.socket,
        tools_allow=ALLOW,
        bus={
            "mxid": "@pong:bearpit.local",
            "access_token": BUS_TOKEN,
            "commons_room_id": "!commons:bearpit.local",
        },
        mcp_servers=[{"name": "realmtools", "bearer_token": MCP_TOKEN}],
    )
    await make_loop(config, ALL).run_turn(f"wake with {BUS_TOKEN}")
    trace = (tmp_path / "home" / ".bearpit" / "trace.jsonl").read_text()
    transcript = (tmp_path / "home" / ".bearpit" / "transcript.jsonl").read_text()
    for text in (trace, transcript):
        for secret in (VIRTUAL_KEY, BUS_TOKEN, MCP_TOKEN, "abcdefghijklmnop123"):
            assert secret not in text
        assert "[REDACTED]" in text
    # The transcript still holds the conversation itself.
    assert "echo: key [REDACTED]" in transcript


async def test_trace_records_have_the_documented_shape(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("echo", {"text": "a"}, "a")]), reply("ok")]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    await make_loop(config, ALL).run_turn("go")
    events = trace_events(config)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["type"] for e in events] == [
        "model_request",
        "model_response",
        "tool_call",
        "tool_result",
        "model_request",
        "model_response",
    ]
    for event in events:
        assert set(event) == {"run_id", "agent_id", "seq", "ts", "type", "turn", "step", "data"}
        assert event["ts"].endswith("Z")
    assert events[1]["data"]["usage"] == {"prompt_tokens": 100, "completion_tokens": 10}
    assert events[3]["data"]["outcome"] == "success"
