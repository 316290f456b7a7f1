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
