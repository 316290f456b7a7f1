from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from ledger.models import VirtualKey

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

SCRIPT = """
steps:
  - match: "your turn"
    text: "blue -> teal"
"""


def test_standalone_agent_answers_the_operator(repo_root: Path, tmp_path: Path) -> None:
    script = tmp_path / "pong.yaml"
    script.write_text(SCRIPT)
    out = io.StringIO()
    typed = io.StringIO("umpire: @pong it is your turn. Last word: blue\n")
    call_command(
        "pit_agent",
        str(repo_root / "examples" / "toolcheck"),
        "pong",
        "--provider",
        "offline",
        "--script",
        str(script),
        stdin=typed,
        stdout=out,
    )
    printed = out.getvalue()
    assert "[pong → Commons] blue -> teal" in printed
    key = VirtualKey.objects.get(agent_id="pong", realm_id__startswith="standalone-")
    assert key.calls == 1 and key.revoked_at is not None
    trace_line = next(line for line in printed.splitlines() if "trace in" in line)
    trace = Path(trace_line.split("trace in ")[1].strip())
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    request = next(e for e in events if e["type"] == "model_request")
    assert request["data"]["tools"] == 0  # standalone has no realmtools
    transcript = (trace.parent / "transcript.jsonl").read_text()
    assert "You are Pong" in transcript  # born with the package's persona
    assert "it is your turn" in transcript


def test_unknown_agent_and_broken_package(repo_root: Path, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"no agent 'nobody'.*ping, pong, umpire"):
        call_command("pit_agent", str(repo_root / "examples" / "toolcheck"), "nobody")
    (tmp_path / "project.json").write_text("{not json")
    with pytest.raises(CommandError, match="does not load"):
        call_command("pit_agent", str(tmp_path), "pong")


WORKSPACE_SCRIPT = """
steps:
  - match: "write it"
    tool_calls:
      - name: write_file
        arguments: {path: out.txt, content: "through the gateway"}
  - text: "wrote out.txt"
"""


def test_workspace_agent_through_a_provider_profile(tmp_path: Path) -> None:
    script = tmp_path / "agent.yaml"
    script.write_text(WORKSPACE_SCRIPT)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    out = io.StringIO()
    call_command(
        "pit_agent",
        "--workspace",
        str(workspace),
        "--provider",
        "offline",
        "--script",
        str(script),
        stdin=io.StringIO("write it\n"),
        stdout=out,
    )
    assert "wrote out.txt" in out.getvalue()
    assert (workspace / "out.txt").read_text() == "through the gateway"
    key = VirtualKey.objects.get(agent_id="agent", realm_id__startswith="standalone-")
    assert key.calls == 2 and key.revoked_at is not None
    # A later session with --continue goes on with that conversation.
    call_command(
        "pit_agent",
        "--workspace",
        str(workspace),
        "--provider",
        "offline",
        "--continue",
        stdin=io.StringIO("/quit\n"),
        stdout=io.StringIO(),
    )
    records = [json.loads(line) for line in (workspace / ".bearpit/transcript.jsonl").open()]
    resumed = next(r for r in records if r["kind"] == "resume")
    said = [m.get("content") for m in resumed["history"]]
    assert "write it" in said and "wrote out.txt" in said


def test_workspace_agent_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="not a folder"):
        call_command("pit_agent", "--workspace", str(tmp_path / "missing"))
    with pytest.raises(CommandError, match="not both"):
        call_command("pit_agent", "examples/toolcheck", "pong", "--workspace", str(tmp_path))
    with pytest.raises(CommandError, match="--api-base needs --model"):
        call_command("pit_agent", "--workspace", str(tmp_path), "--api-base", "http://x/v1")
    with pytest.raises(CommandError, match=r"no API key: set \$NO_SUCH_KEY_VAR"):
        call_command(
            "pit_agent",
            "--workspace",
            str(tmp_path),
            "--api-base",
            "http://x/v1",
            "--model",
            "m",
            "--api-key-env",
            "NO_SUCH_KEY_VAR",
        )
    (tmp_path / ".bearpit").mkdir()
    (tmp_path / ".bearpit/config.json").write_text('{"shell": {"mode": "maybe"}}')
    with pytest.raises(CommandError, match=r"config.json: shell.mode"):
        call_command("pit_agent", "--workspace", str(tmp_path), "--provider", "offline")
