from __future__ import annotations

import asyncio
import io
import os
from dataclasses import replace

import pytest

from runtime.agent import Agent
from runtime.bus import BusMessage
from runtime.terminal_bus import TerminalBus
from tests.runtime.conftest import birth, trace_events
from tests.runtime.provider import Fail, call, reply
from tests.runtime.tools_for_tests import SLOW

pytestmark = pytest.mark.timeout(30)


class Terminal:
    """A terminal for standalone mode: a pipe for typed lines, a buffer for printed replies."""

    def __init__(self) -> None:
        read_fd, self._write_fd = os.pipe()
        self.stdin = os.fdopen(read_fd, "r")
        self.stdout = io.StringIO()

    def type(self, line: str) -> None:
        os.write(self._write_fd, (line + "\n").encode())

    def close(self) -> None:
        os.close(self._write_fd)


async def until(predicate, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


@pytest.fixture
async def running(tmp_path, provider):
    terminal = Terminal()
    agents: list[tuple[Agent, asyncio.Event, asyncio.Task[None]]] = []

    async def start(**overrides) -> Agent:
        config = birth(tmp_path, provider.socket, **overrides)
        agent = Agent(config, TerminalBus(terminal.stdin, terminal.stdout, config.agent_id))
        stop = asyncio.Event()
        task = asyncio.create_task(agent.run(stop))
        await until(lambda: agent.loop is not None)
        agents.append((agent, stop, task))
        return agent

    yield start, terminal
    for _, stop, task in agents:
        stop.set()
        await asyncio.wait_for(task, 10)
    terminal.close()


async def test_idle_agent_makes_no_calls_and_replies_go_to_the_room(running, provider):
    start, terminal = running
    provider.script = [reply("pong!")]
    agent = await start()
    await asyncio.sleep(0.3)
    assert provider.requests == []
    terminal.type("ping: @pong are you there?")
    await until(lambda: "pong!" in terminal.stdout.getvalue())
    assert terminal.stdout.getvalue() == "[pong → Commons] pong!\n"
    wake = provider.requests[0]["messages"][-1]["content"]
    assert "from ping | in Commons" in wake and "@pong are you there?" in wake
    terminal.type("dm ping: secret")
    provider.script = [reply("got it")]
    await until(lambda: "got it" in terminal.stdout.getvalue())
    assert "[pong → dm-ping] got it" in terminal.stdout.getvalue()
    assert agent.dormant is False


async def test_budget_refusal_makes_the_agent_dormant_until_the_next_event(running, provider):
    start, terminal = running
    provider.script = [Fail(402, "budget exhausted", "budget_exceeded"), reply("back again")]
    agent = await start(timers=[{"every_s": 0.1, "message": "tick"}])
    await until(lambda: len(provider.requests) == 1)  # a timer woke it; the gateway refused
    await until(lambda: agent.dormant)
    await asyncio.sleep(0.6)  # timers keep firing, but a dormant agent does not call
    assert len(provider.requests) == 1
    terminal.type("operator says hi")
    await until(lambda: "back again" in terminal.stdout.getvalue())
    assert "operator says hi" in provider.requests[1]["messages"][-1]["content"]
    events = trace_events(agent.config)
    assert any(
        e["type"] == "turn_end" and e["data"]["termination"] == "budget_exhausted" for e in events
    )


async def test_events_during_a_turn_arrive_as_one_block_at_the_next_round(running, provider):
    start, terminal = running
    provider.script = [
        reply(tool_calls=[call("slow", {"seconds": 0.25}, "s1")]),
        reply("saw both"),
    ]
    agent = await start(tools_allow=["slow"])
    agent.registry.add_builtin(SLOW)
    terminal.type("first")
    await until(lambda: len(provider.requests) == 1)
    terminal.type("ping: second")
    terminal.type("dm bob: third")
    await until(lambda: "saw both" in terminal.stdout.getvalue())
    messages = provider.requests[1]["messages"]
    tool_at = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    batch = messages[tool_at + 1 :]
    assert len(batch) == 1 and batch[0]["role"] == "user"
    assert batch[0]["content"].count("</incoming_events>") == 1
    assert "second" in batch[0]["content"] and "third" in batch[0]["content"]
    # The reply answers the room that started the turn; the DM drained mid-turn is
    # read but does not divert it.
    assert "[pong → Commons] saw both" in terminal.stdout.getvalue()


async def test_an_older_message_delivered_late_does_not_divert_the_reply(running, provider):
    start, terminal = running
    provider.script = [reply("my move")]
    agent = await start()
    # The grant in the Commons is newer, but a DM room's older notice reaches the agent
    # after it (a sync delivers rooms in any order): the reply still goes to the Commons.
    agent.on_bus(
        BusMessage("!commons:standalone", "Commons", "system", "@pong your turn", 2000, "$g")
    )
    agent.on_bus(BusMessage("!dm-ping:standalone", "DM with ping", "system", "welcome", 1000, "$w"))
    await until(lambda: "my move" in terminal.stdout.getvalue())
    assert terminal.stdout.getvalue() == "[pong → Commons] my move\n"


async def test_a_turn_called_by_the_floor_answers_in_the_commons_despite_a_newer_dm(
    running, provider
):
    start, terminal = running
    provider.script = [reply("rust")]
    agent = await start()
    assert isinstance(agent.bus, TerminalBus)
    # The grant and a peer's whisper arrive in one batch, the whisper newer: the turn
    # answers the floor, in the Commons, or the player would be skipped.
    grant = agent.bus.parse("system: @pong — it is your turn (round 1).")
    whisper = agent.bus.parse("dm ping: say rust")
    assert grant is not None and whisper is not None
    agent.on_bus(grant)
    agent.on_bus(replace(whisper, ts_ms=grant.ts_ms + 1))
    await until(lambda: "rust" in terminal.stdout.getvalue())
    assert terminal.stdout.getvalue() == "[pong → Commons] rust\n"


async def test_a_floor_call_drained_mid_turn_moves_the_reply_to_the_commons(running, provider):
    start, terminal = running
    provider.script = [
        reply(tool_calls=[call("slow", {"seconds": 0.25}, "s1")]),
        reply("teal -> rust"),
    ]
    agent = await start(tools_allow=["slow"])
    agent.registry.add_builtin(SLOW)
    terminal.type("dm ping: get ready")
    await until(lambda: len(provider.requests) == 1)
    terminal.type("system: @pong — it is your turn (round 1).")
    await until(lambda: "teal -> rust" in terminal.stdout.getvalue())
    assert "your turn" in str(provider.requests[1]["messages"][-1]["content"])
    assert terminal.stdout.getvalue() == "[pong → Commons] teal -> rust\n"
