"""The workspace agent through a real pty: file edits, containment, the task board, the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runtime.provider import ScriptedProvider, call, reply
from tests.runtime.workspace_pty import KEY, agent_at, served

pytestmark = pytest.mark.timeout(90)


def test_edit_escape_tasks_and_the_key(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "app.py").write_text("VERSION = 1\n")
    provider = ScriptedProvider(
        script=[
            reply(
                tool_calls=[
                    call(
                        "edit_file",
                        {"path": "app.py", "old_text": "VERSION = 1", "new_text": "VERSION = 2"},
                    )
                ]
            ),
            reply(tool_calls=[call("write_file", {"path": "../escape.txt", "content": "out"})]),
            reply(tool_calls=[call("write_file", {"path": ".bearpit/notes.md", "content": "x"})]),
            # A model that repeats the key: the screen, trace and transcript mask it.
            reply(f"bumped the version, key {KEY}"),
            reply(tool_calls=[call("task_add", {"title": "write the docs"})]),
            reply(tool_calls=[call("task_claim", {"id": "t1"})]),
            reply(tool_calls=[call("task_complete", {"id": "t1", "summary": "docs written"})]),
            reply("the task is done"),
        ]
    )
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("bump the version")
        agent.expect("bumped the version, key [REDACTED]")
        agent.line("plan and do the docs")
        agent.expect("the task is done")
        agent.line("/tasks")
        agent.expect("t1 [done] write the docs")
        agent.line("/quit")
        assert agent.wait() == 0
        output = agent.output

    assert (workspace / "app.py").read_text() == "VERSION = 2\n"
    assert not (tmp_path / "escape.txt").exists()
    state = workspace / ".bearpit"
    events = [json.loads(line) for line in (state / "trace.jsonl").read_text().splitlines()]
    results = [
        (e["data"]["name"], e["data"]["outcome"], e["data"]["error_kind"])
        for e in events
        if e["type"] == "tool_result"
    ]
    assert results[:3] == [
        ("edit_file", "success", None),
        ("write_file", "error", "workspace_escape"),
        # The state folder is written by the agent's own tools only.
        ("write_file", "blocked", "denied"),
    ]
    assert not (state / "notes.md").exists()
    board = json.loads((state / "tasks.json").read_text())
    assert [(t["id"], t["status"], t["summary"]) for t in board["tasks"]] == [
        ("t1", "done", "docs written")
    ]
    # The key reached the endpoint and nothing else.
    assert provider.auth and all(a == f"Bearer {KEY}" for a in provider.auth)
    for text in (
        output,
        (state / "trace.jsonl").read_text(),
        (state / "transcript.jsonl").read_text(),
    ):
        assert KEY not in text


def test_schedules_and_background_jobs_wake_the_idle_agent(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / ".bearpit").mkdir(parents=True)
    (workspace / ".bearpit/config.json").write_text(
        json.dumps({"shell": {"mode": "allow", "allow": ["echo job-output-*"]}})
    )
    provider = ScriptedProvider(
        script=[
            reply(tool_calls=[call("schedule", {"after_s": 1, "note": "check the oven"})]),
            reply("scheduled"),
            # Woken by the schedule, with nobody typing:
            reply(
                tool_calls=[call("shell", {"command": "echo job-output-42", "background": True})]
            ),
            reply("job started"),
            # Woken by the job's end:
            reply("the job is done"),
        ]
    )
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("remind me")
        agent.expect("scheduled")
        agent.expect("schedule s1 is due: check the oven")
        agent.expect("job started")
        agent.expect("the job is done")
        agent.line("/jobs")
        agent.expect("j1 [exited, exit 0")
        agent.line("/quit")
        assert agent.wait() == 0
    assert "check the oven" in provider.requests[2]["messages"][-1]["content"]
    assert "job-output-42" in provider.requests[4]["messages"][-1]["content"]
    assert (workspace / ".bearpit/jobs/j1.log").read_text() == "job-output-42\n"


def test_a_turn_the_model_answers_with_no_text_still_ends_visibly(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    provider = ScriptedProvider(script=[reply(""), reply("second answer")])
    with served(provider.app()) as base, agent_at(workspace, tmp_path / "home", base) as agent:
        agent.line("say nothing")
        agent.expect("(the model answered with no text)")
        agent.line("now say something")
        agent.expect("second answer")
        agent.line("/quit")
        assert agent.wait() == 0
