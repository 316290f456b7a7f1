"""THE acceptance test: ``pit_up examples/toolcheck`` on a fresh home, nothing running.

Real Synapse, real gateway (offline provider), real realmtools, bwrap sandboxes running
our runtime; only the model is scripted.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.e2e.pitrun import leftover_pids, pit_env, read_chronicle, start_pit, stop_everything

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_pit_up_runs_toolcheck_to_the_verdict(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "pit_up.log"
    began = time.monotonic()
    proc = start_pit(["pit_up", "examples/toolcheck"], pit_env(home), log)
    try:
        code = proc.wait(timeout=120)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    took = time.monotonic() - began
    out = log.read_text(encoding="utf-8")
    assert code == 0, out
    print(f"pit_up examples/toolcheck took {took:.1f}s")
    assert took < 90, out

    lines = out.splitlines()
    phases = [line.split(":", 1)[0] for line in lines if ":" in line]
    for phase in ("validate", "provision", "concluding", "archived"):
        assert phase in phases, out
    assert phases.index("validate") < phases.index("provision") < phases.index("concluding")
    # What a person reads before the report is one line per phase: no log records, no
    # warnings of the libraries underneath.
    before_report = out.split("# toolcheck — final report")[0].splitlines()
    allowed = (
        "starting the homeserver",
        "validate:",
        "provider:",
        "provision:",
        "running:",
        "concluding:",
        "archived:",
        "archive:",
    )
    noise = [line for line in before_report if line.strip() and not line.startswith(allowed)]
    assert not noise, out
    assert "concluding: referee_verdict — the referee ruled: ping wins the relay" in out
    # Concluding wrote the archive, and the run says where.
    (archive_line,) = [line for line in lines if line.startswith("archive: ")]
    archive = Path(archive_line.removeprefix("archive: "))
    assert archive.is_relative_to(home) and (archive / "manifest.json").is_file(), out
    assert (archive / "report.md").is_file(), sorted(p.name for p in archive.iterdir())
    assert "# toolcheck — final report" in out
    assert "**Outcome:** ping wins the relay" in out
    assert "- ping: 1" in out and "- pong: 1" in out
    assert "**total: $" in out

    chron = read_chronicle(home)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    (realm,) = chron.realms
    assert realm["state"] == "archived" and realm["outcome"] == "ping wins the relay"
    running = chron.kinds("lifecycle")[1]
    config = running["config"]
    assert config["provider"] == "offline" and config["referee"] == "umpire"
    assert [a["id"] for a in config["agents"]] == ["ping", "pong", "umpire"]
    assert chron.kinds("tool_manifest") and chron.events[0][1] == "tool_manifest"

    turns = chron.kinds("turn")
    grants = [(t["round"], t["current"]) for t in turns if "event" not in t]
    assert grants[:2] == [(1, "ping"), (1, "pong")]
    assert any(t.get("event") == "round_complete" and t["round"] == 2 for t in turns)
    assert {"event": "removed", "agent": "pong", "by": "referee", "round": 2} in turns
    assert [s["agent"] for s in chron.kinds("sealed_submit")] == ["ping", "pong"]
    assert chron.kinds("reveal")[0]["submissions"] == {"ping": "green", "pong": "red"}
    assert chron.kinds("elimination")[0]["agent"] == "pong"
    assert {"event": "agent_stopped", "agent": "pong", "reason": "eliminated"} in chron.kinds(
        "system"
    )
    assert chron.kinds("verdict")[0]["outcome"] == "ping wins the relay"

    said = [(agent, body) for agent, body, _eid in chron.messages if agent]
    assert ("ping", "blue -> green") in said and ("pong", "green -> red") in said
    ending = [b for a, b, _e in chron.messages if b.startswith("REALM_ENDING")]
    assert ending == [
        "REALM_ENDING — referee_verdict: the referee ruled: ping wins the relay. Stand down."
    ]
    # Nothing chronicled twice: no repeated Matrix event, no repeated event payload.
    assert len({eid for *_x, eid in chron.messages}) == len(chron.messages)
    repeats = Counter(json.dumps([k, p], sort_keys=True) for _i, k, p in chron.events)
    assert [k for k, n in repeats.items() if n > 1 and '"spend"' not in k] == []
    # pit_up stopped what it started: homeserver, servers and sandboxes are gone.
    assert left == []
    logs = sorted(p.name for p in (home / "realms" / realm["realm_id"] / "logs").iterdir())
    assert logs == ["ping.log", "pong.log", "umpire.log"]
