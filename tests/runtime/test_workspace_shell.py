"""The shell tool's permission hook, answered at a real pty: a refused command never runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.provider import ScriptedProvider, call, reply
from tests.runtime.workspace_pty import agent_at, served

pytestmark = pytest.mark.timeout(90)


def shell(command: str) -> dict[str, Any]:
    return reply(tool_calls=[call("shell", {"command": command})])


def settings(workspace: Path, **shell_settings: object) -> None:
    state = workspace / ".bearpit"
    state.mkdir(parents=True, exist_ok=True)
    (state / "config.json").write_text(json.dumps({"shell": shell_settings}))


def test_ask_mode_runs_only_what_the_person_allows(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    settings(workspace, mode="ask", allow=["touch listed-marker"])
    provider = ScriptedProvider(
        script=[
            shell("touch refused-marker"),
            shell("touch allowed-marker"),
            # Allow-listed, so it runs without a question...
            shell("touch listed-marker"),
            # ...but not with a second command riding on it: that is asked about.
            shell("touch listed-marker; touch smuggled-marker"),
            reply("all four tried"),
        ]
    )
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("make the markers")
        agent.expect("shell wants to run: touch refused-marker")
        agent.expect("allow? [y/N]")
        agent.line("n")
        agent.expect("→ error (denied)")
        agent.expect("shell wants to run: touch allowed-marker")
        agent.line("y")
        agent.expect("→ success")
        agent.expect("shell wants to run: touch listed-marker; touch smuggled-marker")
        agent.line("no")
        agent.expect("all four tried")
        agent.line("/quit")
        assert agent.wait() == 0
        output = agent.output

    assert not (workspace / "refused-marker").exists()
    assert (workspace / "allowed-marker").exists()
    assert (workspace / "listed-marker").exists()
    assert not (workspace / "smuggled-marker").exists()
    assert output.count("shell wants to run") == 3  # the listed command was not asked about
    events = [json.loads(line) for line in (workspace / ".bearpit/trace.jsonl").open()]
    decisions = [
        (e["data"]["decision"], e["data"]["reason"])
        for e in events
        if e["type"] == "hook_decision" and e["data"].get("hook") == "shell_permission"
    ]
    assert decisions == [
        ("deny", "asked_no"),
        ("allow", "asked_yes"),
        ("allow", "allow_list"),
        ("deny", "asked_no"),
    ]


def test_deny_mode_runs_nothing_and_asks_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    settings(workspace, mode="deny", allow=["touch deny-marker"])
    provider = ScriptedProvider(script=[shell("touch deny-marker"), reply("refused, as expected")])
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("make the marker")
        agent.expect("→ error (denied)")
        agent.expect("refused, as expected")
        agent.line("/quit")
        assert agent.wait() == 0
        assert "shell wants to run" not in agent.output
    assert not (workspace / "deny-marker").exists()
    # The model was told why.
    tool_message = provider.requests[1]["messages"][-1]
    assert tool_message["role"] == "tool" and "deny_mode" in tool_message["content"]
