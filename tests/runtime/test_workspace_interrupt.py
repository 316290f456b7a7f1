"""Ctrl-C through a real pty: it stops the turn, not the session; twice at the prompt ends it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.provider import ScriptedProvider, call, reply
from tests.runtime.workspace_pty import agent_at, served

pytestmark = pytest.mark.timeout(90)


def test_ctrl_c_interrupts_a_slow_model_call_and_the_session_goes_on(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()

    def slow(body: dict[str, Any]) -> dict[str, Any]:
        time.sleep(4)  # on the provider's own thread: the agent's call waits
        return reply("too late")

    provider = ScriptedProvider(script=[slow, reply("after the interrupt")])
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("think slowly")
        deadline = time.monotonic() + 20
        while not provider.requests:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        agent.send("\x03")
        agent.expect("(interrupted)")
        agent.line("go on")
        agent.expect("after the interrupt")
        agent.send("\x03")
        agent.expect("(Ctrl-C again or /quit to leave)")
        agent.send("\x03")
        assert agent.wait() == 0
        assert "too late" not in agent.output
    # The next turn knew the previous one was cut.
    assert "interrupted" in provider.requests[1]["messages"][-1]["content"]


def running_in(folder: Path) -> list[int]:
    """Processes whose working folder is ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(entry / "cwd").resolve() == folder.resolve():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_ctrl_c_kills_a_running_shell_command(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".bearpit").mkdir(parents=True)
    (workspace / ".bearpit/config.json").write_text(
        '{"shell": {"mode": "allow", "allow": ["sleep 30"]}}'
    )
    provider = ScriptedProvider(
        script=[reply(tool_calls=[call("shell", {"command": "sleep 30"})]), reply("next turn")]
    )
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("sleep")
        deadline = time.monotonic() + 20
        while not running_in(workspace):
            assert time.monotonic() < deadline, agent.output
            time.sleep(0.05)
        agent.send("\x03")
        agent.expect("(interrupted)")
        assert running_in(workspace) == []  # the command's process group is gone
        agent.line("and now?")
        agent.expect("next turn")
        agent.line("/quit")
        assert agent.wait() == 0
    # The cut call got a result, so the history the model saw next was valid.
    messages = provider.requests[1]["messages"]
    assert messages[-2]["role"] == "tool" and "Interrupted" in messages[-2]["content"]
