"""examples/board-vote: two debate rounds, a sealed yes/no/abstain vote, the majority tally."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "board-vote"
BOARD = ("anouk", "bertil", "carmen", "desmond", "elif")
BALLOTS = {"anouk": "yes", "bertil": "no", "carmen": "yes", "desmond": "abstain", "elif": "abstain"}


def test_board_vote_fails_without_a_majority_of_the_sealed_ballots(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # The inline default motion was bound into the prose.
    running = chron.kinds("lifecycle")[1]
    motion = "the company should buy two battery-electric ferries on a ten-year loan"
    assert running["config"]["parameters"] == {"motion": motion}
    (kickoff,) = [b for b in run.system_posts() if "board of Larkspur Ferries" in b]
    assert f"The motion before the board: {motion}." in kickoff

    # Two debate rounds and the vote, every director in roster order each time; every
    # grant carried the verdict floor.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, d) for r in (1, 2, 3) for d in BOARD]
    assert {t["min_rounds"] for t in chron.kinds("turn")} == {3}
    # Everyone argued in the debate rounds and only voted in the third.
    for who in BOARD:
        opening, reply, voted = run.said(who)
        assert len(opening) > 60 and len(reply) > 60 and voted == "I have voted."
    # Four calls each (two speeches, the seal, the line after it): nobody woke out of turn.
    calls = [p["agent"] for p in chron.kinds("spend")]
    assert [calls.count(d) for d in BOARD] == [4] * len(BOARD)
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [("motion", d) for d in BOARD]

    # Majority: yes has the most ballots (2 of 5) but needs 3, so there is no majority,
    # where plurality would have carried it.
    (tally,) = chron.kinds("tally")
    assert (tally["round"], tally["ruleset"], tally["kind"], tally["result"]) == (
        "motion",
        "majority",
        "tie",
        None,
    )
    assert tally["detail"] == {"counts": {"yes": 2, "no": 1, "abstain": 2}, "needed": 3}
    (reveal,) = chron.kinds("reveal")
    assert reveal["submissions"] == BALLOTS

    # The chair's verdict follows the tally, after the vote round and not before.
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the motion fails" and verdict["issued_by"] == "chair"
    assert verdict["reasons"] == "yes 2, no 1, abstain 2; a majority needed 3 yes ballots"
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2, 3]
    vote_closed, last_seal, tally_at, verdict_at = run.order(
        ("turn", {"event": "round_complete", "completed": 2}),
        ("sealed_submit", {"round": "motion", "agent": "elif"}),
        ("tally", {"round": "motion"}),
        ("verdict", {}),
    )
    assert vote_closed < last_seal < tally_at < verdict_at
    assert not [t for t in run.turns() if t["round"] == 4]
