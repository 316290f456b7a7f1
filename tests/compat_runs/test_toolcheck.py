"""toolcheck: the reference's smoke test, with an elimination that stops a sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]


def test_toolcheck_eliminates_the_failed_relay_and_rules(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "toolcheck", timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    assert [(t["round"], t["current"]) for t in run.turns()] == [(1, "ping"), (1, "pong")]
    assert chron.kinds("reveal") == [
        {"round": "R1", "submissions": {"ping": "pear", "pong": "plum"}}
    ]
    assert run.said("ping") == ["APPLE -> pear"] and run.said("pong") == ["APPLE -> plum"]
    assert [(s["agent"], s["delta"]) for s in chron.kinds("score")] == [("ping", 1)]

    # The elimination took pong out of the turns and stopped its sandbox.
    assert chron.kinds("elimination") == [
        {
            "agent": "pong",
            "reason": "lower score: echoed APPLE, not ping's word",
            "issued_by": "umpire",
        }
    ]
    assert [(t["agent"], t["by"]) for t in run.turns("removed")] == [("pong", "referee")]
    assert {"event": "agent_stopped", "agent": "pong", "reason": "eliminated"} in chron.kinds(
        "system"
    )
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "ping wins the relay" and verdict["issued_by"] == "umpire"
    assert verdict["scoreboard"] == {"ping": 1, "pong": 0}
    eliminated, ruled = run.order(("elimination", {"agent": "pong"}), ("verdict", {}))
    assert eliminated < ruled
    assert run.said("umpire")[-1] == "🏁 RELAY OVER — ping wins."
