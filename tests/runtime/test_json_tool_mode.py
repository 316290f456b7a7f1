"""JSON tool mode against recorded replies: what a model without native tool calling sends.

The replies are the shapes seen from small local models (llama.cpp's server with a
``json_schema`` response format, and the same models without one): the constrained
object, a bare call in the content, a fenced block, and JSON that is cut or malformed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.loop import Termination
from runtime.model import json_mode_schema, parse_json_reply
from tests.runtime.conftest import birth, make_loop, trace_events
from tests.runtime.provider import Fail, call, reply
from tests.runtime.tools_for_tests import ALL, ECHO

pytestmark = pytest.mark.timeout(30)

# Shaped as llama.cpp's server returns a constrained reply: the grammar lets the model
# put whitespace and newlines between the tokens.
CONSTRAINED = (
    '{\n  "tool_calls": [ {"name"\n\n: "echo", "arguments": {"text": "amber"}} ],\n'
    '  "message": "sealed"}'
)
BARE = '{"name": "echo", "arguments": {"text": "amber"}}'
FENCED = '```json\n{"name": "echo", "arguments": {"text": "amber"}}\n```'
CUT = '{\n    "tool_calls": [{"name": "echo", "arguments": {"text": "am'
PROSE = "I will now say amber."


def ids() -> Any:
    counter = iter(range(1, 100))
    return lambda: f"json_{next(counter)}"


def test_the_constrained_reply_becomes_its_calls_and_message() -> None:
    parsed = parse_json_reply(CONSTRAINED, ids())
    assert parsed is not None
    message, calls = parsed
    assert message == "sealed"
    assert [(c.id, c.name, json.loads(c.arguments_json)) for c in calls] == [
        ("json_1", "echo", {"text": "amber"})
    ]


@pytest.mark.parametrize("content", [BARE, FENCED], ids=["bare", "fenced"])
def test_a_bare_call_in_the_content_is_a_call(content: str) -> None:
    parsed = parse_json_reply(content, ids())
    assert parsed is not None
    message, calls = parsed
    assert message == ""
    assert [(c.name, json.loads(c.arguments_json)) for c in calls] == [("echo", {"text": "amber"})]


@pytest.mark.parametrize(
    "content",
    [CUT, PROSE, "[1, 2]", '{"answer": 42}', '{"tool_calls": "echo"}x'],
    ids=["cut", "prose", "list", "other-object", "trailing"],
)
def test_malformed_or_foreign_content_is_plain_text(content: str) -> None:
    assert parse_json_reply(content, ids()) is None


def test_string_arguments_pass_through_and_nameless_items_are_dropped() -> None:
    content = json.dumps(
        {"message": "", "tool_calls": [{"arguments": {}}, {"name": "echo", "arguments": "{}"}]}
    )
    parsed = parse_json_reply(content, ids())
    assert parsed is not None
    assert [(c.name, c.arguments_json) for c in parsed[1]] == [("echo", "{}")]


def test_the_schema_offers_each_tool_with_its_own_arguments_and_bounds_the_message() -> None:
    tool = {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "format": "email", "pattern": "a+"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
    }
    schema = json_mode_schema([tool], max_tokens=50)
    assert list(schema["properties"]) == ["tool_calls", "message"]
    (offered,) = schema["properties"]["tool_calls"]["items"]["anyOf"]
    assert offered["properties"]["name"] == {"const": "echo"}
    # Keywords llama.cpp's grammar does not take are left out; the structure stays.
    assert offered["properties"]["arguments"] == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    assert schema["properties"]["message"]["maxLength"] == 100


async def test_json_mode_dispatches_a_recorded_call_and_returns_its_result(tmp_path, provider):
    provider.script = [
        reply(CONSTRAINED),
        reply(json.dumps({"tool_calls": [], "message": "amber"})),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "json"})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.termination is Termination.COMPLETED
    assert result.final_text == "amber"
    assert result.tool_calls == 1
    first, second = provider.requests
    assert first["response_format"]["type"] == "json_schema"
    assert "tools" not in first
    assert any("echo: amber" in m["content"] for m in second["messages"] if m["role"] == "user")


async def test_a_malformed_json_mode_reply_is_the_turns_text(tmp_path, provider):
    provider.script = [reply(CUT)]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "json"})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.termination is Termination.COMPLETED
    assert result.tool_calls == 0
    assert result.final_text == CUT.strip()


async def test_auto_turns_to_json_after_a_bare_call_and_stays_there(tmp_path, provider):
    provider.script = [
        reply(BARE),
        reply("first done"),
        reply('{"tool_calls": [], "message": "x"}'),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "auto"})
    loop = make_loop(config, [ECHO])
    first = await loop.run_turn("go")
    assert first.tool_calls == 1
    # Asked natively first; after the bare call every request is constrained JSON.
    assert "tools" in provider.requests[0] and "response_format" not in provider.requests[0]
    assert "response_format" in provider.requests[1] and "tools" not in provider.requests[1]
    await loop.run_turn("again")
    assert "response_format" in provider.requests[2]
    detected = [e for e in trace_events(config) if e["type"] == "tool_mode_detected"]
    assert len(detected) == 1
    assert detected[0]["data"]["mode"] == "json"


async def test_auto_stays_native_for_a_model_that_calls_tools_natively(tmp_path, provider):
    provider.script = [reply(tool_calls=[call("echo", {"text": "n"}, "c1")]), reply("done")]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "auto"})
    result = await make_loop(config, [ECHO]).run_turn("go")
    assert result.tool_calls == 1
    assert result.final_text == "done"
    assert all("tools" in r and "response_format" not in r for r in provider.requests)
    assert not [e for e in trace_events(config) if e["type"] == "tool_mode_detected"]


async def test_auto_asks_again_in_json_when_the_server_refuses_tools(tmp_path, provider):
    provider.script = [
        Fail(500, "tools param requires --jinja flag"),
        reply('{"tool_calls": [], "message": "plain"}'),
    ]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "auto"})
    result = await make_loop(config, [ECHO]).run_turn("go")
    assert result.termination is Termination.COMPLETED
    assert result.final_text == "plain"
    refused, retried = provider.requests
    assert "tools" in refused
    assert "tools" not in retried and retried["response_format"]["type"] == "json_schema"


async def test_native_mode_leaves_json_content_alone(tmp_path, provider):
    provider.script = [reply(BARE)]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"])
    result = await make_loop(config, [ECHO]).run_turn("go")
    assert result.tool_calls == 0
    assert result.final_text == BARE


CALLS = '{"tool_calls": [{"name": "echo", "arguments": {"text": "amber"}}], '


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (CALLS + '"message": "I sealed it and now I will', "I sealed it and now I will"),
        (CALLS + '"message":', ""),
        (CALLS + '"mess', ""),
        (CALLS, ""),
    ],
    ids=["in-message", "after-key", "in-key", "after-comma"],
)
async def test_a_reply_cut_after_its_calls_still_runs_them(tmp_path, provider, cut, message):
    provider.script = [cut_reply(cut), reply('{"tool_calls": [], "message": "fin"}')]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "json"})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.tool_calls == 1
    assert result.final_text == "fin"
    assistant = [m for m in provider.requests[1]["messages"] if m["role"] == "assistant"]
    assert json.loads(assistant[0]["content"])["message"] == message


async def test_a_reply_cut_inside_its_calls_runs_nothing(tmp_path, provider):
    # Closing this would run echo with text "am": a half-written call is never run.
    provider.script = [cut_reply(CUT)]
    config = birth(tmp_path, provider.socket, tools_allow=["echo"], model={"tool_mode": "json"})
    result = await make_loop(config, ALL).run_turn("go")
    assert result.tool_calls == 0
    assert len(provider.requests) == 1


def cut_reply(content: str) -> dict[str, Any]:
    answer = reply(content)
    answer["choices"][0]["finish_reason"] = "length"
    return answer
