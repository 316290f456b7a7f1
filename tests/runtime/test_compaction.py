from __future__ import annotations

from typing import Any

import pytest

from runtime.context import SUMMARY_OPEN
from runtime.loop import Termination
from tests.runtime.conftest import birth, make_loop, trace_events
from tests.runtime.provider import Fail, call, reply
from tests.runtime.tools_for_tests import ALL, ALLOW

pytestmark = pytest.mark.timeout(30)

OVERFLOW = Fail(
    400, "This model's maximum context length is 8000 tokens", "context_length_exceeded"
)


def filled_script(rounds: int = 8) -> list[Any]:
    """A first turn of many tool rounds with bulky results, to give compaction a middle."""
    steps = [
        reply(tool_calls=[call("echo", {"text": f"r{i} " + "x" * 1000}, f"c{i}")])
        for i in range(rounds)
    ]
    return [*steps, reply("first turn done")]


def assert_whole_groups(messages: list[dict[str, Any]]) -> None:
    asked: list[str] = []
    answered: list[str] = []
    for message in messages:
        if message["role"] == "assistant":
            asked.extend(c["id"] for c in message.get("tool_calls") or [])
        if message["role"] == "tool":
            # A result never appears without the assistant message that asked for it.
            assert message["tool_call_id"] in asked
            answered.append(message["tool_call_id"])
    assert sorted(asked) == sorted(answered)


async def test_overflow_compacts_once_and_retries(tmp_path, provider):
    provider.script = [
        *filled_script(),
        OVERFLOW,
        reply("SUMMARY: echoed eight times"),
        reply("ok"),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    loop = make_loop(config, ALL)
    await loop.run_turn("THE TASK: echo things")
    result = await loop.run_turn("second wake")
    assert result.termination is Termination.COMPLETED
    summary_request, final_request = provider.requests[-2], provider.requests[-1]
    assert "tools" not in summary_request
    assert "r1 xxx" in summary_request["messages"][1]["content"]
    messages = final_request["messages"]
    assert messages[0] == {"role": "system", "content": "You are pong."}
    assert messages[1] == {"role": "user", "content": "THE TASK: echo things"}
    assert messages[2]["content"].startswith(SUMMARY_OPEN)
    assert "SUMMARY: echoed eight times" in messages[2]["content"]
    assert messages[-1]["content"] == "second wake"
    assert len(messages) < len(provider.requests[-3]["messages"])
    assert_whole_groups(messages)
    (event,) = [e for e in trace_events(config) if e["type"] == "compaction"]
    assert event["data"]["reason"] == "overflow" and event["data"]["summary"] == "ok"


async def test_a_second_overflow_ends_the_turn(tmp_path, provider):
    provider.script = [*filled_script(), OVERFLOW, reply("summary"), OVERFLOW, reply("never")]
    loop = make_loop(birth(tmp_path, provider.socket, tools_allow=ALLOW), ALL)
    await loop.run_turn("task")
    result = await loop.run_turn("again")
    assert result.termination is Termination.CONTEXT_OVERFLOW


async def test_failed_summary_falls_back_to_a_digest(tmp_path, provider):
    provider.script = [*filled_script(), OVERFLOW, Fail(500, "summary broke"), reply("ok")]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW, limits={"provider_retries": 0})
    loop = make_loop(config, ALL)
    await loop.run_turn("task")
    result = await loop.run_turn("again")
    assert result.termination is Termination.COMPLETED
    summary = provider.requests[-1]["messages"][2]["content"]
    assert summary.startswith(SUMMARY_OPEN)
    assert "automatic digest" in summary
    assert "echo(" in summary
    assert_whole_groups(provider.requests[-1]["messages"])
    (event,) = [e for e in trace_events(config) if e["type"] == "compaction"]
    assert event["data"]["summary"] == "fallback"


async def test_threshold_compaction_keeps_the_latest_inbound_message(tmp_path, provider):
    # The provider reports a nearly full window: the next round compacts before calling.
    big_usage = reply(tool_calls=[call("echo", {"text": "y" * 1500}, "late")], prompt_tokens=7000)
    provider.script = [*filled_script(), big_usage, reply("summary text"), reply("fine")]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    loop = make_loop(config, ALL)
    await loop.run_turn("task")
    await loop.run_turn("LATEST WAKE")
    final = provider.requests[-1]["messages"]
    assert any(m["content"] == "LATEST WAKE" for m in final if m["role"] == "user")
    assert_whole_groups(final)
    (event,) = [e for e in trace_events(config) if e["type"] == "compaction"]
    assert event["data"]["reason"] == "threshold"
    assert event["data"]["after_tokens"] < event["data"]["before_tokens"]
