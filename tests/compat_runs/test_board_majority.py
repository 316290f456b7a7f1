"""board-majority: a debate round, the round closed with eliminate('none'), a sealed yes/no
ballot counted with run_code, and no verdict before round 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

DIRECTORS = ("dana", "emil", "faye", "gus", "hana")
BALLOTS = {"dana": "yes", "emil": "no", "faye": "yes", "gus": "yes", "hana": "no"}


def test_board_majority_debates_then_decides_by_sealed_ballot(tmp_path: Path) -> None:
    # The secretary's rubric names the motion by two parameters with no default.
    args = ["-p", "price=$210M", "-p", "target=Halyard Systems"]
    run = run_corpus_package(tmp_path, "board-majority", timeout=150, args=args)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron
    project = chron.kinds("lifecycle")[1]["project"]
    (secretary,) = [a for a in project["agents"] if a["id"] == "secretary"]
    assert "state the motion ($210M for Halyard Systems — $130M cash" in secretary["rubric"]

    # Two rounds of five turns; nobody sealed in the debate round.
    assert [(t["round"], t["current"]) for t in run.turns()] == [
        (r, d) for r in (1, 2) for d in DIRECTORS
    ]
    assert {t["min_rounds"] for t in chron.kinds("turn")} == {2}
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2]
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [("merger", d) for d in DIRECTORS]
    round_two, first_seal = run.order(
        ("turn", {"round": 2, "current": "dana"}), ("sealed_submit", {"agent": "dana"})
    )
    assert round_two < first_seal

    # The secretary's gavel: a round closed with nobody removed, and the floor reopened.
    assert chron.kinds("elimination") == [
        {"agent": None, "reason": "debate round closed", "issued_by": "secretary"}
    ]
    assert not run.turns("removed")
    gavel, reopened = run.order(
        ("elimination", {"agent": None}), ("turn", {"round": 2, "current": "dana"})
    )
    assert gavel < reopened
    assert all(len(run.said(d)) == 2 for d in DIRECTORS)

    # The ballots opened all at once, counted in the secretary's own sandbox.
    assert chron.kinds("reveal") == [{"round": "merger", "submissions": BALLOTS}]
    (count,) = chron.kinds("exec_result")
    assert (count["agent"], count["exit_code"]) == ("secretary", 0)
    assert count["output"] == (
        "yes 3 no 2 -> approved\nfor: dana, faye, gus | against: emil, hana\n"
    )
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "merger approved" and verdict["issued_by"] == "secretary"
    assert verdict["reasons"] == "3-2: dana, faye, gus in favour; emil, hana against"
    boundary, revealed, counted, ruled = run.order(
        ("turn", {"event": "round_complete", "completed": 2}),
        ("reveal", {}),
        ("exec_result", {}),
        ("verdict", {}),
    )
    assert boundary < revealed < counted < ruled
    assert run.said("secretary")[-1] == "🏁 DECISION — merger approved — 3-2"
    # remember() kept the secretary's minutes between its two boundaries.
    notes = [(n["agent"], n["text"]) for n in chron.kinds("note")]
    assert notes == [
        ("secretary", "debate done; sealed early: nobody"),
        ("secretary", "ruled: merger approved 3-2"),
    ]
