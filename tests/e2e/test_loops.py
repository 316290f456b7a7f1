"""Loop and echo detection (``spec.loops``) in whole realms: two agents that answer each
other with the same line, concluded as ``loop`` or nudged; a realm that does not repeat
itself is left alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_mechanics_run import PACKAGES, RealmRun, assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(170)]


def variant(tmp_path: Path, name: str, spec: dict[str, Any], **scripts: str) -> Path:
    """A copy of ``echo`` with ``spec`` merged into its project and scripts replaced."""
    folder = tmp_path / "src" / name
    shutil.copytree(PACKAGES / "echo", folder)
    project = json.loads((folder / "project.json").read_text())
    project["spec"].update(spec)
    (folder / "project.json").write_text(json.dumps(project))
    for agent, text in scripts.items():
        (folder / "offline" / f"{agent}.yaml").write_text(text)
    return folder


def loop_events(run: RealmRun) -> list[dict[str, Any]]:
    return [p for p in run.chron.kinds("system") if p.get("event") == "loop"]


def test_an_echoing_realm_concludes_as_loop_with_the_evidence(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "echo")
    assert_clean_ending(run, "loop")
    # Both agents may close a loop at the same tick: each is chronicled, the first ends it.
    every = loop_events(run)
    assert every and all(p["action"] == "conclude" for p in every)
    found = every[0]
    assert found["what"] == "messages"
    agent = found["agent"]
    assert agent in ("hawk", "dove")
    # The evidence names the agent's own messages, by Chronicle id, and quotes them.
    assert len(found["refs"]) == 3
    said = [body for who, body, _eid in run.chron.messages if who == agent]
    assert all(" ".join(s.split()) in said for s in found["shown"])
    (detail,) = [p["detail"] for p in run.chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert detail == found["detail"]
    assert detail.startswith(f"{agent} repeated itself: 3 near-identical messages among its last 6")
    report = (run.realm_dir / "archive" / "report.md").read_text()
    assert "- kind: `loop`" in report and f"{agent} repeated itself" in report
    # It ended on the loop, long before its duration limit.
    assert run.took < 80


def test_nudge_mode_nudges_the_echoing_agent_and_the_realm_runs_on(tmp_path: Path) -> None:
    folder = variant(
        tmp_path,
        "echo-nudge",
        {
            "loops": {"window": 6, "threshold": 0.85, "repeats": 3, "action": "nudge"},
            "termination": [{"type": "duration", "limit": "15s"}],
        },
    )
    run = run_realm(tmp_path, folder)
    assert_clean_ending(run, "duration")
    found = loop_events(run)
    assert found and all(p["action"] == "nudge" for p in found)
    nudges = [b for b in run.system_posts() if "Repeating it will not move the realm" in b]
    assert len(nudges) == len(found)
    assert {p["agent"] for p in found} <= {"hawk", "dove"}
    # Each nudge mentions the agent its loop event names, in the same order.
    named = [b.split(" ", 2)[1].rstrip(",") for b in nudges]
    assert named == [p["agent"] for p in found]
    assert all(f"{p['agent']}, your last messages" in b for p, b in zip(found, nudges, strict=True))


def test_a_realm_that_does_not_repeat_itself_is_untouched(tmp_path: Path) -> None:
    lines = ["Let us count the sheep.", "Seventeen goats arrived by train.", "Blue is a colour."]
    script = "idle: ''\nsteps:\n" + "".join(f"  - text: {json.dumps(t)}\n" for t in lines)
    other = "idle: ''\nsteps:\n" + "".join(f"  - text: {json.dumps(t[::-1])}\n" for t in lines)
    folder = variant(
        tmp_path,
        "echo-healthy",
        {"termination": [{"type": "stall", "limit": "6s"}, {"type": "duration", "limit": "90s"}]},
        hawk=script,
        dove=other,
    )
    run = run_realm(tmp_path, folder)
    assert_clean_ending(run, "stall")
    assert loop_events(run) == []
    assert len(run.said("hawk")) == 3 and len(run.said("dove")) == 3
    assert not [b for b in run.system_posts() if "Repeating it" in b]


def test_the_same_tool_call_over_and_over_concludes_as_loop(tmp_path: Path) -> None:
    recall = (
        "idle: ''\nloop: true\nsteps:\n  - tool_calls:\n      - {name: recall, arguments: {}}\n"
    )
    folder = variant(tmp_path, "echo-calls", {}, hawk=recall, dove="idle: ''\nsteps: []\n")
    run = run_realm(tmp_path, folder)
    assert_clean_ending(run, "loop")
    (found,) = loop_events(run)
    assert (found["agent"], found["what"], found["action"]) == ("hawk", "tool_calls", "conclude")
    traced = {i: p for i, k, p in run.chron.events if k == "trace"}
    # The evidence is the agent's own traced calls, by Chronicle id: the same call each time.
    calls = [traced[ref] for ref in found["refs"]]
    assert len(calls) == 3
    assert all(c["type"] == "tool_call" and c["agent_id"] == "hawk" for c in calls)
    assert {c["data"]["name"] for c in calls} == {"recall"}
    assert found["detail"].startswith("hawk repeated itself: 3 identical tool calls")
