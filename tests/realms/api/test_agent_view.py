"""The agent's own view: what its model saw in a call, from the runtime's real trace.

A real agent loop runs two model calls against a scripted provider (the only stand-in);
its trace is ingested into the Chronicle as the Warden does, then read back through
``GET /api/realms/{id}/agents/{agent}/view`` and ``pit_trace --as``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from chronicle.models import Event
from chronicle.traces import ingest_trace
from runtime import request_record
from runtime.request_record import RequestRecorder
from tests.fixtures.realms import build_realm
from tests.runtime.conftest import VIRTUAL_KEY, birth, make_loop
from tests.runtime.provider import ScriptedProvider, call, reply, serve
from tests.runtime.tools_for_tests import ALL, ALLOW

from .conftest import check_answer

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

REALM = "viewed-abc123"
SYSTEM = "You are pong. Keep every answer short."
ROUTE = "/api/realms/{realm_id}/agents/{agent}/view"


def run_agent(tmp_path: Path) -> tuple[ScriptedProvider, Path]:
    """Two model calls of a real agent loop; the provider's requests and the trace file."""
    provider = ScriptedProvider(
        script=[reply(tool_calls=[call("echo", {"text": "hi"}, "c1")]), reply("all done")]
    )
    sock_dir = Path(tempfile.mkdtemp(prefix="av-"))
    config = birth(tmp_path, sock_dir / "gw.sock", tools_allow=ALLOW, system_prompt=SYSTEM)

    async def main() -> None:
        async with serve(provider.app(), uds=sock_dir / "gw.sock"):
            await make_loop(config, ALL).run_turn(f"go; the key {VIRTUAL_KEY} is not yours")

    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)
    return provider, Path(config.trace_path)


@pytest.fixture
def viewed(tmp_path: Path) -> ScriptedProvider:
    build_realm(REALM, agents=[{"id": "pong"}, {"id": "ping"}])
    provider, trace = run_agent(tmp_path)
    assert ingest_trace(REALM, "pong", trace) > 0
    return provider


def requests_traced() -> list[Event]:
    return list(
        Event.objects.filter(realm_id=REALM, kind="trace", payload__type="model_request").order_by(
            "id"
        )
    )


def redacted(value: Any) -> Any:
    return json.loads(json.dumps(value).replace(VIRTUAL_KEY, "[REDACTED]"))


def test_the_view_is_the_exact_request_of_the_call_at_a_time(routes_api, viewed, openapi) -> None:
    first, second = requests_traced()
    sent_first, sent_second = viewed.requests
    # The latest call: the system prompt and tools exactly as sent, the history as sent.
    answer = routes_api.get(f"/api/realms/{REALM}/agents/pong/view")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    check_answer(openapi, ROUTE, "get", 200, body)
    assert body["request_event"] == second.pk
    assert sent_second["messages"][0] == {"role": "system", "content": SYSTEM}
    assert body["system"] == SYSTEM
    assert body["tools"] == sent_second["tools"]
    assert body["tool_names"] == [t["function"]["name"] for t in sent_second["tools"]]
    assert sorted(body["tool_names"]) == ["big", "boom", "echo", "slow"]
    assert body["history"] == redacted(sent_second["messages"][1:])
    assert body["reply"] == {"content": "all done", "tool_calls": []}
    # The second request recorded only its history: the prompt and tools came from the first.
    assert "system" not in second.payload["data"]["request"]
    assert "system" in first.payload["data"]["request"]

    # At the first call's time (in ms) or its event id: that call, and what it did with it.
    for at in (str(first.ts_ms), f"%23{first.pk}"):
        body = routes_api.get(f"/api/realms/{REALM}/agents/pong/view?at={at}").json()
        assert body["request_event"] == first.pk, at
        assert body["system"] == SYSTEM and body["tools"] == sent_first["tools"]
        assert body["history"] == redacted(sent_first["messages"][1:])
        assert len(body["history"]) == 1 and body["history"][0]["role"] == "user"
        assert body["reply"]["tool_calls"] == [
            {"id": "c1", "name": "echo", "arguments": '{"text": "hi"}'}
        ]
        assert body["response"]["finish_reason"] == "tool_calls"


def test_the_view_never_holds_a_secret(routes_api, viewed) -> None:
    # The model did see the key (the wake carried it); the trace and the view never do.
    assert VIRTUAL_KEY in json.dumps(viewed.requests[0])
    raw = json.dumps([e.payload for e in Event.objects.filter(realm_id=REALM)])
    assert VIRTUAL_KEY not in raw
    for at in ("", f"?at=%23{requests_traced()[0].pk}"):
        answer = routes_api.get(f"/api/realms/{REALM}/agents/pong/view{at}")
        assert answer.status_code == 200
        assert VIRTUAL_KEY not in answer.content.decode()
        assert "go; the key [REDACTED] is not yours" in answer.content.decode()


def test_bad_moments_and_unknown_agents_are_refused(routes_api, viewed) -> None:
    first = requests_traced()[0]
    cases = {
        "?at=yesterday": (400, "at"),
        "?at=%2399999999": (400, "at"),
        f"?at={first.ts_ms - 60_000}": (404, "error"),
    }
    for query, (status, key) in cases.items():
        answer = routes_api.get(f"/api/realms/{REALM}/agents/pong/view{query}")
        assert answer.status_code == status, (query, answer.content)
        assert key in answer.json()
    assert (
        "made no model call"
        in routes_api.get(f"/api/realms/{REALM}/agents/ping/view").json()["error"]
    )
    nobody = routes_api.get(f"/api/realms/{REALM}/agents/nobody/view")
    assert nobody.status_code == 404 and "no agent 'nobody'" in nobody.json()["error"]
    assert routes_api.get("/api/realms/gone-abc123/agents/pong/view").status_code == 404


def test_pit_trace_as_at_prints_the_request_and_the_reply(viewed, tmp_path) -> None:
    first, second = requests_traced()
    out = StringIO()
    call_command("pit_trace", "-r", REALM, "--as", "pong", "--at", f"#{first.pk}", stdout=out)
    printed = out.getvalue()
    assert f"trace event #{first.pk}" in printed
    assert "── system prompt ──\n" + SYSTEM + "\n" in printed
    lines = printed.splitlines()
    at = lines.index("── tools offered (4) ──")
    assert [line.split(" — ")[0] for line in lines[at + 1 : at + 5]] == [
        "big",
        "boom",
        "echo",
        "slow",
    ]
    assert "[user] go; the key [REDACTED] is not yours" in printed
    assert '── reply ──\n→ echo({"text": "hi"})' in printed
    assert VIRTUAL_KEY not in printed
    out = StringIO()
    call_command("pit_trace", "-r", REALM, "--as", "pong", stdout=out)
    assert f"trace event #{second.pk}" in out.getvalue()
    assert "[tool] (c1) echo: hi" in out.getvalue()
    assert "── reply ──\nall done" in out.getvalue()
    with pytest.raises(CommandError, match=r"--at: expected an ISO time"):
        call_command("pit_trace", "-r", REALM, "--as", "pong", "--at", "noon")
    with pytest.raises(CommandError, match=r"--as: no agent 'nobody'"):
        call_command("pit_trace", "-r", REALM, "--as", "nobody")
    with pytest.raises(CommandError, match=r"--at: needs --as"):
        call_command("pit_trace", "-r", REALM, "--at", "noon")


def test_a_request_record_stays_within_its_bounds() -> None:
    recorder = RequestRecorder()
    huge = "x" * 50_000
    messages = [{"role": "system", "content": "s" * 100_000}] + [
        {"role": "user", "content": f"{i} {huge}"} for i in range(40)
    ]
    tools = [
        {"type": "function", "function": {"name": f"t{i}", "x": "y" * 5000}} for i in range(20)
    ]
    record = recorder.record({"messages": messages, "tools": tools}, tools)
    size = len(json.dumps(record).encode())
    assert size < 150_000  # well under the 256 KiB line the platform ingests
    assert record["history_omitted"] > 0
    assert record["history"][-1]["content"].startswith("39 x")  # the newest kept first
    assert "[cut: " in record["history"][-1]["content"]
    assert record["tools_clipped"] > 0 and record["tools"][-1]["name"] == "t19"
    assert len(record["system"].encode()) <= request_record.SYSTEM_BYTES + 100
    # Unchanged prompt and tools are not recorded again.
    assert "system" not in recorder.record({"messages": messages, "tools": tools}, tools)
