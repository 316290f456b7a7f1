"""The runtime's loop through the real Ledger gateway, driven by the scripted provider."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

from ledger.gateway.server import GatewayServer
from ledger.models import VirtualKey
from ledger.services.keys import mint_virtual_key
from ledger.services.profiles import seed_profiles
from runtime.loop import Termination
from tests.runtime.conftest import birth, make_loop, trace_events
from tests.runtime.tools_for_tests import ALL, ALLOW

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

SCRIPT = """
steps:
  - tool_calls:
      - name: echo
        arguments: {text: "through the gateway"}
  - match: "echo: through the gateway"
    text: "relay done"
"""


@pytest.fixture
def gateway(short_tmp: Path, transactional_db: None) -> Iterator[GatewayServer]:
    seed_profiles()
    server = GatewayServer(uds_path=short_tmp / "gateway.sock", upstream_timeout=5.0)
    server.start()
    yield server
    server.stop()


def mint(agent: str, cap: str | None) -> str:
    _, secret = mint_virtual_key(
        realm_id="rt-gw",
        agent_id=agent,
        provider="offline",
        model="scripted-medium",
        cap_usd=None if cap is None else Decimal(cap),
        on_exhausted="starve",
        script=SCRIPT,
    )
    return secret


async def test_a_turn_through_the_gateway_is_metered(tmp_path, gateway):
    assert gateway.uds_path is not None
    secret = await asyncio.to_thread(mint, "pong", "1.0")
    config = birth(
        tmp_path, gateway.uds_path, tools_allow=ALLOW, model={"api_key": secret, "name": "any"}
    )
    result = await make_loop(config, ALL).run_turn("@pong your turn")
    assert result.termination is Termination.COMPLETED
    assert result.final_text == "relay done"
    assert result.tool_calls == 1
    usages = [e["data"]["usage"] for e in trace_events(config) if e["type"] == "model_response"]
    assert len(usages) == 2 and all(u["prompt_tokens"] > 0 for u in usages)
    key = await VirtualKey.objects.aget(realm_id="rt-gw", agent_id="pong")
    assert key.calls == 2 and key.spent_nusd > 0
    assert secret not in Path(config.trace_path).read_text()


async def test_an_exhausted_cap_ends_the_turn_as_budget_exhausted(tmp_path, gateway):
    assert gateway.uds_path is not None
    secret = await asyncio.to_thread(mint, "ping", "0.000000001")
    config = birth(tmp_path, gateway.uds_path, model={"api_key": secret})
    result = await make_loop(config).run_turn("go")
    assert result.termination is Termination.BUDGET_EXHAUSTED
    errors = [e["data"] for e in trace_events(config) if e["type"] == "provider_error"]
    assert len(errors) == 1 and errors[0]["status"] == 402


LONG_SCRIPT = """
steps:
  - text: "{{ 'a long and winding answer ' * 40 }}"
    tool_calls:
      - name: echo
        arguments: {text: "never sent"}
  - text: "short this time"
"""


async def test_a_reply_cut_at_max_tokens_is_traced_and_noted_on_the_next_call(tmp_path, gateway):
    assert gateway.uds_path is not None
    _, secret = await asyncio.to_thread(
        mint_virtual_key,
        realm_id="rt-gw",
        agent_id="cut",
        provider="offline",
        model="scripted-medium",
        cap_usd=Decimal("1.0"),
        on_exhausted="starve",
        script=LONG_SCRIPT,
    )
    config = birth(
        tmp_path,
        gateway.uds_path,
        tools_allow=ALLOW,
        model={"api_key": secret, "name": "any", "max_output_tokens": 16},
    )
    loop = make_loop(config, ALL)
    first = await loop.run_turn("@cut your turn")
    # The scripted provider cut it like a real model: text truncated, the tool call dropped.
    assert first.tool_calls == 0
    cut = [e for e in trace_events(config) if e["type"] == "reply_truncated"]
    assert len(cut) == 1, [e["type"] for e in trace_events(config)]
    assert cut[0]["data"]["max_tokens"] == 16
    assert cut[0]["data"]["completion_tokens"] == 16
    assert cut[0]["turn"] == 1

    second = await loop.run_turn("@cut your turn again")
    assert second.final_text == "short this time"
    notes = [m for m in loop.messages[1:] if m["role"] == "system"]
    assert len(notes) == 1
    assert "cut off" in notes[0]["content"] and "16 tokens" in notes[0]["content"]
    # The note sits after the wake that follows the cut, before that wake's model call.
    index = loop.messages.index(notes[0])
    assert loop.messages[index - 1]["content"] == "@cut your turn again"
    assert loop.messages[index + 1]["role"] == "assistant"
    assert len([e for e in trace_events(config) if e["type"] == "reply_truncated"]) == 1
