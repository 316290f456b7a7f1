from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from runtime.agent import Agent
from runtime.resume import INTERRUPTED, replay
from runtime.terminal_bus import TerminalBus
from runtime.tools import ToolDefinition, object_schema
from runtime.trace import Redactor, TranscriptWriter
from tests.runtime.conftest import birth
from tests.runtime.provider import call, reply
from tests.runtime.test_agent import Terminal, until

pytestmark = pytest.mark.timeout(30)


async def _forever(args: dict[str, object]) -> str:
    await asyncio.sleep(60)
    return "never"


HANG = ToolDefinition("hang", "Hangs.", object_schema({}, []), _forever, timeout_s=120)


async def test_a_restarted_runtime_resumes_and_closes_the_interrupted_call(tmp_path, provider):
    config = birth(tmp_path, provider.socket, tools_allow=["hang"])
    terminal = Terminal()
    first = Agent(config, TerminalBus(terminal.stdin, terminal.stdout, "pong"))
    first.registry.add_builtin(HANG)
    provider.script = [reply(tool_calls=[call("hang", {}, "h1")])]
    task = asyncio.create_task(first.run(asyncio.Event()))
    terminal.type("please do the long thing")
    await until(lambda: len(provider.requests) == 1)
    await asyncio.sleep(0.2)
    task.cancel()  # the process dies in the middle of the tool call
    with contextlib.suppress(asyncio.CancelledError):
        await task
    terminal.close()

    second_terminal = Terminal()
    second = Agent(config, TerminalBus(second_terminal.stdin, second_terminal.stdout, "pong"))
    second.registry.add_builtin(HANG)
    provider.script = [reply("resumed")]
    stop = asyncio.Event()
    task = asyncio.create_task(second.run(stop))
    second_terminal.type("are you back?")
    await until(lambda: "resumed" in second_terminal.stdout.getvalue())
    stop.set()
    await asyncio.wait_for(task, 10)
    second_terminal.close()
    messages = provider.requests[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert "please do the long thing" in messages[1]["content"]
    assert messages[3] == {"role": "tool", "tool_call_id": "h1", "content": INTERRUPTED}
    assert "are you back?" in messages[4]["content"]


def test_replay_starts_from_the_latest_checkpoint_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, Redactor([]))
    writer.message({"role": "system", "content": "s"})
    writer.message({"role": "user", "content": "old"})
    writer.note(
        "compaction",
        history=[{"role": "system", "content": "s"}, {"role": "user", "content": "summary"}],
    )
    writer.message({"role": "user", "content": "new"})
    writer.close()
    with path.open("a") as handle:
        handle.write(json.dumps({"kind": "message", "message": {"role": "user"}})[:20])
    assert [m["content"] for m in replay(path)] == ["s", "summary", "new"]
    assert replay(tmp_path / "none.jsonl") == []
