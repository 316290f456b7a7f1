"""examples/pitch-night: judged speeches scored with `score`, a verdict from the scoreboard."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pitch-night"
FOUNDERS = ("ines", "kofi", "luz")


def test_pitch_night_is_won_on_the_judges_scores(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # A pitch round and a question round, founders in roster order, the judge outside it.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, f) for r in (1, 2) for f in FOUNDERS]
    assert {t["min_rounds"] for t in chron.kinds("turn")} == {2}
    for who in FOUNDERS:
        assert len(run.said(who)) == 2
    # The judge spoke once per round boundary: the opening, the questions, the result.
    opening, questions, result = run.said("judge")
    assert opening.startswith("Welcome to pitch night.")
    assert all(f"{f}: " in questions for f in FOUNDERS) and "@" not in questions
    # Each founder was called twice, once per grant: nobody was woken out of turn.
    calls = [p["agent"] for p in chron.kinds("spend")]
    assert [calls.count(f) for f in FOUNDERS] == [2, 2, 2]

    # Every speech was scored by the judge: round 1 out of 10, round 2 out of 5.
    scores = [(s["agent"], s["delta"], s["reason"].split(":")[0]) for s in chron.kinds("score")]
    assert scores == [
        ("ines", 7, "pitch"),
        ("kofi", 8, "pitch"),
        ("luz", 6, "pitch"),
        ("ines", 5, "answer"),
        ("kofi", 1, "answer"),
        ("luz", 3, "answer"),
    ]
    assert {s["issued_by"] for s in chron.kinds("score")} == {"judge"}
    round_one_scored, round_two_opened = run.order(
        ("score", {"agent": "luz", "delta": 6}),
        ("turn", {"round": 2, "current": "ines"}),
    )
    assert round_one_scored < round_two_opened

    # The verdict names the scoreboard's leader (kofi led after round 1) and carries the board.
    (verdict,) = chron.kinds("verdict")
    assert verdict["scoreboard"] == {"ines": 12, "kofi": 9, "luz": 9}
    assert verdict["outcome"] == "ines wins the place" and verdict["issued_by"] == "judge"
    assert verdict["reasons"].startswith("totals: ines 12, kofi 9, luz 9. ")
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2]
    last_score, verdict_at = run.order(("score", {"agent": "luz", "delta": 3}), ("verdict", {}))
    assert last_score < verdict_at
    assert result.lower().startswith("ines wins the place")
    assert not [t for t in run.turns() if t["round"] == 3]
