"""Standalone mode: one agent in a terminal, the operator playing everyone else."""

from __future__ import annotations

import asyncio
from typing import TextIO

from runtime.agent import Agent
from runtime.birth import BirthConfig
from runtime.terminal_bus import TerminalBus, Writer

HELP = (
    "Type a line to speak as the operator in the Commons; 'name: text' speaks as name, "
    "'dm name: text' privately as name. End with /quit or end of input.\n"
)


async def run_in_terminal(config: BirthConfig, stdin: TextIO, stdout: Writer) -> Agent:
    """Run the agent until the terminal closes, then let it answer what it already got."""
    bus = TerminalBus(stdin, stdout, config.agent_id)
    agent = Agent(config, bus)
    stop = asyncio.Event()
    task = asyncio.create_task(agent.run(stop))
    stdout.write(HELP)
    stdout.flush()
    closed = asyncio.ensure_future(bus.closed.wait())
    await asyncio.wait({task, closed}, return_when=asyncio.FIRST_COMPLETED)
    if not task.done():
        await agent.settle()
        stop.set()
    closed.cancel()
    await task
    return agent
