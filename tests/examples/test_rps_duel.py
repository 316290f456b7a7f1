"""examples/rps-duel: sealed moves over rounds, the dominance tally, no verdict before round 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rps-duel"
BEATS = {"rock": ["scissors"], "scissors": ["paper"], "paper": ["rock"]}
MOVES = {
    "R1": {"mara": "rock", "tobin": "scissors"},
    "R2": {"mara": "paper", "tobin": "paper"},
    "R3": {"mara": "scissors", "tobin": "rock"},
    "R4": {"mara": "paper", "tobin": "rock"},
}


def test_rps_duel_is_decided_by_the_dominance_tallies(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Four rounds, both players sealing one move each on their own turn.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, p) for r in (1, 2, 3, 4) for p in ("mara", "tobin")]
    assert {t["min_rounds"] for t in chron.kinds("turn")} == {2}
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [(label, p) for label in MOVES for p in ("mara", "tobin")]
    assert run.said("mara") == [f"{label} sealed." for label in MOVES]

    # Each round was tallied once with dominance and the declared beats; the tally
    # opened the moves itself, and a draw is a tie with no result.
    tallies = chron.kinds("tally")
    assert [(t["round"], t["ruleset"], t["config"]) for t in tallies] == [
        (label, "dominance", {"beats": BEATS}) for label in MOVES
    ]
    assert [(t["kind"], t["result"]) for t in tallies] == [
        ("agent", "mara"),
        ("tie", None),
        ("agent", "tobin"),
        ("agent", "mara"),
    ]
    assert {r["round"]: r["submissions"] for r in chron.kinds("reveal")} == MOVES

    # Scores follow the tallies exactly: the draw scored nobody.
    scores = [(s["agent"], s["delta"], s["reason"]) for s in chron.kinds("score")]
    assert scores == [("mara", 1, "won R1"), ("tobin", 1, "won R3"), ("mara", 1, "won R4")]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "mara wins the duel" and verdict["issued_by"] == "marshal"
    assert verdict["scoreboard"] == {"mara": 2, "tobin": 1}

    # The verdict came after the fourth round's moves, well past min_rounds_before_verdict.
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2, 3, 4]
    last_seal, last_tally, verdict_at = run.order(
        ("sealed_submit", {"round": "R4", "agent": "tobin"}),
        ("tally", {"round": "R4"}),
        ("verdict", {}),
    )
    assert last_seal < last_tally < verdict_at
    assert not [t for t in run.turns() if t["round"] == 5]
