from __future__ import annotations

from typing import Any

import pytest

from runtime.hooks import Allow, Deny, Hooks, Modify
from runtime.tools import Outcome, ToolResult
from tests.runtime.conftest import birth, make_loop, trace_events
from tests.runtime.provider import call, reply
from tests.runtime.tools_for_tests import ALL, ALLOW

pytestmark = pytest.mark.timeout(30)


def results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


async def test_pre_tool_allow_deny_modify_and_fail_closed(tmp_path, provider):
    def policy(tool_call):
        text = tool_call.arguments.get("text")
        if text == "secret plans":
            return Deny("not in this realm")
        if text == "shout":
            return Modify({"text": "SHOUT"})
        if text == "crash":
            raise ValueError("policy bug")
        return Allow()

    provider.script = [
        reply(
            tool_calls=[
                call("echo", {"text": "fine"}, "a"),
                call("echo", {"text": "secret plans"}, "b"),
                call("echo", {"text": "shout"}, "c"),
                call("echo", {"text": "crash"}, "d"),
            ]
        ),
        reply("done"),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    await make_loop(config, ALL, Hooks(pre_tool=[policy])).run_turn("go")
    got = results(provider.requests[1])
    assert got["a"] == "echo: fine"
    assert got["b"] == "Blocked: not in this realm"
    assert got["c"] == "echo: SHOUT"
    assert got["d"].startswith("Blocked:")  # an exception in a policy hook blocks the call
    decisions = [
        e["data"]["decision"] for e in trace_events(config) if e["type"] == "hook_decision"
    ]
    assert decisions == ["deny", "modify", "error"]


async def test_post_tool_pre_model_and_on_stop(tmp_path, provider):
    stops: list[str] = []

    def on_stop(final: str) -> str | None:
        stops.append(final)
        return "You forgot to sign." if len(stops) == 1 else None

    def pre_model(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "temperature": 0.25}

    def post_tool(tool_call, result: ToolResult) -> ToolResult:
        return ToolResult(result.output.upper(), Outcome.SUCCESS)

    provider.script = [
        reply(tool_calls=[call("echo", {"text": "quiet"}, "a")]),
        reply("unsigned"),
        reply("signed, pong"),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    hooks = Hooks(pre_model=[pre_model], post_tool=[post_tool], on_stop=[on_stop])
    result = await make_loop(config, ALL, hooks).run_turn("go")
    assert result.final_text == "signed, pong"
    assert stops == ["unsigned", "signed, pong"]
    assert all(r["temperature"] == 0.25 for r in provider.requests)
    assert results(provider.requests[1])["a"] == "ECHO: QUIET"
    assert provider.requests[2]["messages"][-1] == {
        "role": "user",
        "content": "You forgot to sign.",
    }
