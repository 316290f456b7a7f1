"""The scripted provider through the real gateway, spoken to by the OpenAI SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import openai
import pytest

from chronicle.models import Event
from ledger.gateway.server import GatewayServer
from ledger.models import Spend, VirtualKey
from tests.ledger.conftest import mint

SCRIPT = """
steps:
  - text: "Hello, I am {{ agent }}."
  - match: "your turn"
    tool_calls:
      - name: post_message
        arguments: {text: "echo: {{ last_message }}"}
  - regex: "score (\\\\d+)"
    tool_calls:
      - name: submit
        arguments: {value: "{{ tool_json.score }}", raw: "{{ last_tool_result }}"}
idle: ""
"""

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _tcp_client(server: GatewayServer, secret: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url, api_key=secret, max_retries=0)


def _uds_client(server: GatewayServer, secret: str) -> openai.OpenAI:
    assert server.uds_path is not None
    http = httpx2.Client(transport=httpx2.HTTPTransport(uds=str(server.uds_path)))
    return openai.OpenAI(
        base_url="http://gateway/v1", api_key=secret, http_client=http, max_retries=0
    )


def test_script_runs_in_order_waits_for_cues_and_meters(gateway: GatewayServer) -> None:
    secret = mint("r-script", "alice", "1.0", script=SCRIPT)
    client = _tcp_client(gateway, secret)
    first = client.chat.completions.create(
        model="anything", messages=[{"role": "user", "content": "start"}]
    )
    assert first.choices[0].message.content == "Hello, I am alice."
    assert first.model == "scripted-medium"
    assert first.usage is not None and first.usage.prompt_tokens > 0

    # The next step waits for its cue: without it the idle reply (empty) comes back.
    idle = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "nothing yet"}]
    )
    assert idle.choices[0].message.content == ""
    assert not idle.choices[0].message.tool_calls

    cue = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "Bob: it is YOUR TURN now"}]
    )
    calls: Any = cue.choices[0].message.tool_calls
    assert calls and calls[0].function.name == "post_message"
    assert json.loads(calls[0].function.arguments) == {"text": "echo: Bob: it is YOUR TURN now"}
    assert cue.choices[0].finish_reason == "tool_calls"

    tool = client.chat.completions.create(
        model="x",
        messages=[
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in calls]},
            {
                "role": "tool",
                "tool_call_id": calls[0].id,
                "content": '{"score": 17, "n": "score 17"}',
            },
        ],
    )
    tool_calls: Any = tool.choices[0].message.tool_calls
    args = json.loads(tool_calls[0].function.arguments)
    assert args["value"] == "17"
    assert json.loads(args["raw"]) == {"score": 17, "n": "score 17"}

    # Exhausted: idle from now on.
    done = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "score 3"}]
    )
    assert done.choices[0].message.content == ""

    key = VirtualKey.objects.get(realm_id="r-script", agent_id="alice")
    assert key.script_cursor == 3
    assert key.calls == 5 and key.reserved_nusd == 0
    spends = list(Spend.objects.filter(realm_id="r-script"))
    assert len(spends) == 5 and all(s.cost_nusd > 0 and s.outcome == "ok" for s in spends)
    assert key.spent_nusd == sum(s.cost_nusd for s in spends)
    events = list(Event.objects.filter(realm_id="r-script", kind="spend").order_by("id"))
    assert len(events) == 5
    assert events[-1].payload["cumulative"] == pytest.approx(key.spent_nusd / 1e9)
    assert events[0].payload["agent"] == "alice" and events[0].payload["cap"] == 1.0
    assert events[0].payload["tokens_in"] == first.usage.prompt_tokens


def test_scripted_streams_over_the_unix_socket(gateway: GatewayServer) -> None:
    secret = mint("r-uds", "bob", None, script="steps:\n  - text: " + "word " * 60 + "\n")
    client = _uds_client(gateway, secret)
    models = client.models.list()
    assert [m.id for m in models.data] == ["scripted-medium"]
    stream = client.chat.completions.create(
        model="x",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text, usage, chunks = "", None, 0
    for chunk in stream:
        chunks += 1
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        if chunk.usage:
            usage = chunk.usage
    assert text.strip() == ("word " * 60).strip()
    assert chunks > 5
    assert usage is not None and usage.completion_tokens == 60
    spend = Spend.objects.get(realm_id="r-uds")
    assert spend.streamed and spend.tokens_out == 60 and spend.outcome == "ok"


def test_max_tokens_truncates_like_a_model(gateway: GatewayServer) -> None:
    secret = mint(
        "r-trunc", "c", None, script="steps:\n  - text: " + "many words here " * 20 + "\n"
    )
    client = _tcp_client(gateway, secret)
    out = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "hi"}], max_tokens=5
    )
    assert out.choices[0].finish_reason == "length"
    assert out.usage is not None and out.usage.completion_tokens == 5


def test_scripted_tool_calls_stream_through_the_sdk(gateway: GatewayServer) -> None:
    script = "steps:\n  - tool_calls:\n      - name: submit\n        arguments: {value: 42}\n"
    client = _uds_client(gateway, mint("r-stool", "a", "1", script=script))
    stream = client.chat.completions.create(
        model="x", messages=[{"role": "user", "content": "go"}], stream=True
    )
    name, args, finish = "", "", None
    for chunk in stream:
        for delta_call in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
            if delta_call.function is not None:
                name += delta_call.function.name or ""
                args += delta_call.function.arguments or ""
        if chunk.choices and chunk.choices[0].finish_reason:
            finish = chunk.choices[0].finish_reason
    assert (name, json.loads(args), finish) == ("submit", {"value": 42}, "tool_calls")
    assert VirtualKey.objects.get(realm_id="r-stool").script_cursor == 1
