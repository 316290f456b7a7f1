from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from runtime.loop import Termination
from tests.runtime.conftest import birth, make_loop, trace_events
from tests.runtime.provider import Fail, ScriptedProvider, call, reply, serve
from tests.runtime.tools_for_tests import ALL, ALLOW

pytestmark = pytest.mark.timeout(30)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


async def test_every_call_gets_one_result_and_bad_arguments_go_back_to_the_model(
    tmp_path, provider
):
    provider.script = [
        reply(
            tool_calls=[
                call("echo", {"text": "hi"}, "c1"),
                call("echo", "{not json", "c2"),
                call("echo", {"times": "x", "extra": 1}, "c3"),
                call("nope", {}, "c4"),
            ]
        ),
        reply("all done"),
    ]
    loop = make_loop(birth(tmp_path, provider.socket, tools_allow=ALLOW), ALL)
    result = await loop.run_turn("go")
    assert result.termination is Termination.COMPLETED
    assert result.final_text == "all done"
    results = {m["tool_call_id"]: m["content"] for m in tool_messages(provider.requests[1])}
    assert list(results) == ["c1", "c2", "c3", "c4"]
    assert results["c1"] == "echo: hi"
    assert "not valid JSON" in results["c2"]
    # All schema problems are reported at once, each with its location.
    assert "'text' is a required property" in results["c3"]
    assert "times: 'x' is not of type 'integer'" in results["c3"]
    assert "Additional properties" in results["c3"]
    assert "no tool named 'nope'" in results["c4"]


async def test_the_key_travels_as_bearer_and_tools_are_listed(tmp_path, provider):
    provider.script = [reply("ok")]
    loop = make_loop(birth(tmp_path, provider.socket, tools_allow=["echo"]), ALL)
    await loop.run_turn("hello")
    assert provider.auth == ["Bearer vk-test-9f8e7d6c5b4a39281706"]
    request = provider.requests[0]
    assert request["model"] == "scripted-model"
    # The allowlist filters the listing: only echo is offered although four tools exist.
    assert [t["function"]["name"] for t in request["tools"]] == ["echo"]


async def test_an_unlisted_tool_cannot_be_called(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("boom", {}, "c1")]), reply("ok")]
    loop = make_loop(birth(tmp_path, provider.socket, tools_allow=["echo"]), ALL)
    await loop.run_turn("go")
    (result,) = tool_messages(provider.requests[1])
    assert "no tool named 'boom'" in result["content"]


async def test_step_limit(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("echo", {"text": str(i)})]) for i in range(10)]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW, limits={"max_steps_per_turn": 3})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.termination is Termination.MAX_STEPS
    assert len(provider.requests) == 3
    assert any(e["type"] == "limit_hit" for e in trace_events(config))


async def test_consecutive_error_limit(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("boom", {}, f"c{i}")]) for i in range(10)]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    result = await make_loop(config, ALL).run_turn("go")
    assert result.termination is Termination.CONSECUTIVE_ERRORS
    assert len(provider.requests) == 3
    assert "RuntimeError: kaboom" in tool_messages(provider.requests[1])[0]["content"]


async def test_wall_time_limit_and_tool_timeout(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("slow", {"seconds": 5}, f"c{i}")]) for i in range(9)]
    config = birth(
        tmp_path,
        provider.socket,
        tools_allow=ALLOW,
        limits={"max_wall_seconds_per_turn": 0.5, "max_consecutive_errors": 50},
    )
    result = await make_loop(config, ALL).run_turn("go")
    assert result.termination is Termination.WALL_TIME
    assert 1 <= len(provider.requests) <= 3
    assert "did not finish within 0.3s" in tool_messages(provider.requests[1])[0]["content"]


async def test_retries_429_and_5xx_with_backoff(tmp_path, provider):
    provider.script = [Fail(429, "slow down"), Fail(503, "overloaded"), reply("made it")]
    config = birth(tmp_path, provider.socket, limits={"backoff_base_s": 0.01})
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.COMPLETED
    assert len(provider.requests) == 3
    errors = [e for e in trace_events(config) if e["type"] == "provider_error"]
    assert [e["data"]["status"] for e in errors] == [429, 503]


async def test_retries_give_up_after_the_configured_count(tmp_path, provider):
    provider.script = [Fail(500)] * 5
    config = birth(tmp_path, provider.socket, limits={"backoff_base_s": 0.01})
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.PROVIDER_ERROR
    assert len(provider.requests) == 3  # one try + provider_retries (2)


async def test_a_turn_waits_for_a_gateway_that_is_restarting(tmp_path, short_tmp):
    scripted = ScriptedProvider(script=[reply("made it")])
    sock = short_tmp / "later.sock"  # nothing listens yet: the platform is restarting
    config = birth(tmp_path, sock, limits={"backoff_base_s": 0.05, "provider_retries": 0})

    async def come_back() -> None:
        await asyncio.sleep(0.6)
        async with serve(scripted.app(), uds=sock):
            while not scripted.requests:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)

    back = asyncio.create_task(come_back())
    result = await make_loop(config).run_turn("go")
    await back
    assert result.termination is Termination.COMPLETED
    assert len(scripted.requests) == 1
    waits = [e for e in trace_events(config) if e["type"] == "gateway_unreachable"]
    assert len(waits) == 1  # traced once, not once per try


async def test_a_gateway_gone_for_good_ends_the_turn_after_the_wait(tmp_path, short_tmp):
    config = birth(
        tmp_path, short_tmp / "never.sock", limits={"backoff_base_s": 0.05, "gateway_wait_s": 0.3}
    )
    started = time.monotonic()
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.PROVIDER_ERROR
    assert 0.3 <= time.monotonic() - started < 5


async def test_no_retry_when_the_gateway_says_it_cannot_help(tmp_path, provider):
    provider.script = [Fail(503, "upstream refused", retryable=False), reply("never")]
    config = birth(tmp_path, provider.socket, limits={"backoff_base_s": 0.01})
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.PROVIDER_ERROR
    assert len(provider.requests) == 1


@pytest.mark.parametrize("failure", [Fail(402, "pay up"), Fail(429, "cap", "budget_exceeded")])
async def test_budget_refusal_ends_the_turn_without_retrying(tmp_path, provider, failure):
    provider.script = [failure, reply("never")]
    config = birth(tmp_path, provider.socket, limits={"backoff_base_s": 0.01})
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.BUDGET_EXHAUSTED
    assert len(provider.requests) == 1


async def test_spill_of_large_tool_output(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("big", {"lines": 5000}, "big1")]), reply("ok")]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW)
    await make_loop(config, ALL).run_turn("go")
    (result,) = tool_messages(provider.requests[1])
    assert len(result["content"]) < 3000
    assert "line 000000" in result["content"] and "line 004999" in result["content"]
    spilled = list((tmp_path / "home" / ".bearpit" / "tool-results").glob("big1_*.txt"))
    assert len(spilled) == 1
    assert spilled[0].read_text().count("\n") == 5000
    assert str(spilled[0]) in result["content"]
    (event,) = [e for e in trace_events(config) if e["type"] == "tool_result"]
    assert event["data"]["spill_path"] == str(spilled[0])


async def test_json_tool_mode_turns_structured_output_into_tool_calls(tmp_path, provider):
    action = {"message": "", "tool_calls": [{"name": "echo", "arguments": {"text": "j"}}]}
    provider.script = [
        reply(json.dumps(action)),
        reply(json.dumps({"message": "fin", "tool_calls": []})),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "json"})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.final_text == "fin"
    first, second = provider.requests
    assert "tools" not in first
    schema = first["response_format"]["json_schema"]["schema"]
    offered = schema["properties"]["tool_calls"]["items"]["anyOf"]
    assert [c["properties"]["name"]["const"] for c in offered] == ["echo"]
    # The tool result comes back as a user message, since the model has no tool role.
    assert any("echo: j" in m["content"] for m in second["messages"] if m["role"] == "user")
    assert not any(m["role"] == "tool" for m in second["messages"])


def cut(content: str = "", tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A reply the provider stopped at max_tokens."""
    answer = reply(content, tool_calls)
    answer["choices"][0]["finish_reason"] = "length"
    answer["usage"]["completion_tokens"] = 64
    return answer


async def test_a_cut_reply_is_noted_on_the_very_next_model_call(tmp_path, provider):
    # The cut reply kept a tool call (some providers send it, half-written): the loop goes
    # on in the same turn, and that next call already carries the note.
    provider.script = [cut("I will", [call("echo", '{"text": "unfinish', "c1")]), reply("done")]
    config = birth(tmp_path, provider.socket, tools_allow=ALLOW, model={"max_output_tokens": 64})
    loop = make_loop(config, ALL)
    result = await loop.run_turn("go")
    assert result.final_text == "done"
    assert [m["role"] for m in provider.requests[0]["messages"]] == ["system", "user"]
    sent = provider.requests[1]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "system"]
    assert "64 tokens" in sent[-1]["content"]
    events = [e for e in trace_events(config) if e["type"] == "reply_truncated"]
    assert [e["data"] for e in events] == [
        {"max_tokens": 64, "completion_tokens": 64, "text_chars": 6, "tool_calls": 1}
    ]
    # Said once: a later call does not repeat it.
    provider.script = [reply("again")]
    await loop.run_turn("next")
    assert [m["role"] for m in provider.requests[2]["messages"]].count("system") == 2


async def test_a_model_that_never_answers_is_a_timeout_naming_the_limit(tmp_path, short_tmp):
    from starlette.applications import Starlette
    from starlette.routing import Route

    async def silent(request: Any) -> Any:
        await asyncio.sleep(3)

    app = Starlette(routes=[Route("/v1/chat/completions", silent, methods=["POST"])])
    sock = short_tmp / "silent.sock"
    config = birth(
        tmp_path,
        sock,
        model={"request_timeout_s": 0.5},
        limits={"backoff_base_s": 0.01, "provider_retries": 0},
    )
    async with serve(app, uds=sock):
        result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.PROVIDER_ERROR
    (error,) = [e for e in trace_events(config) if e["type"] == "provider_error"]
    # httpx's own text is empty here; the error says which limit ran out.
    assert error["data"]["error"] == "model request timed out waiting for the answer (0.5 s)"
