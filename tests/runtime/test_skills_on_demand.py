"""On-demand skills: named in the first prompt, read with load_skill, never inlined."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from runtime.agent import Agent
from runtime.terminal_bus import TerminalBus
from tests.runtime.conftest import birth
from tests.runtime.provider import call, reply
from tests.runtime.test_agent import Terminal, until

pytestmark = pytest.mark.timeout(30)

MAPS = "Read a map from the legend outward. " * 60
PROMPT = {"agent_id": "pong", "mxid": "@pong:bearpit.local", "persona": "You are Pong."}


def _skills(on_demand: bool) -> list[dict[str, object]]:
    return [
        {"name": "agent-basics", "text": "Act, then post once."},
        {
            "name": "cartography",
            "text": MAPS,
            "description": "How to read the realm's maps.",
            "on_demand": on_demand,
        },
    ]


async def _first_request(
    tmp_path, provider, on_demand: bool, script
) -> tuple[dict[str, Any], Terminal]:
    terminal = Terminal()
    provider.requests.clear()
    provider.script = list(script)
    config = birth(
        tmp_path / ("od" if on_demand else "in"),
        provider.socket,
        system_prompt=None,
        prompt=PROMPT,
        skills=_skills(on_demand),
    )
    agent = Agent(config, TerminalBus(terminal.stdin, terminal.stdout, config.agent_id))
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    await until(lambda: agent.loop is not None)
    terminal.type("ping: @pong how do maps work?")
    await until(lambda: len(provider.requests) == len(script))
    await agent.settle()
    stop.set()
    await asyncio.wait_for(task, 10)
    terminal.close()
    return provider.requests[0], terminal


async def test_on_demand_skills_make_a_smaller_first_request_and_load_by_name(tmp_path, provider):
    inline, _ = await _first_request(tmp_path, provider, False, [reply("ok")])
    script = [
        reply(tool_calls=[call("load_skill", {"name": "cartography"}, "c1")]),
        reply(tool_calls=[call("load_skill", {"name": "alchemy"}, "c2")]),
        reply("maps read"),
    ]
    first, terminal = await _first_request(tmp_path, provider, True, script)
    assert MAPS.strip() in inline["messages"][0]["content"]
    system = first["messages"][0]["content"]
    assert MAPS.strip() not in system
    assert "`cartography`: How to read the realm's maps." in system
    assert "Act, then post once." in system  # the role's skill stays inline
    assert len(json.dumps(first)) < len(json.dumps(inline)) - len(MAPS) // 2
    assert "load_skill" in {t["function"]["name"] for t in first["tools"]}
    assert "load_skill" not in {t["function"]["name"] for t in inline.get("tools") or []}
    results = [m for m in provider.requests[-1]["messages"] if m["role"] == "tool"]
    assert results[0]["content"] == MAPS.strip()
    assert "no skill named 'alchemy'; you can load: cartography" in results[1]["content"]
    assert "maps read" in terminal.stdout.getvalue()
