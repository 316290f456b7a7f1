"""Sealed submit, reveal and every built-in tally ruleset, in one driving-referee realm."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

BALLOTS = {
    "rps": {"alpha": "rock", "bravo": "scissors", "charlie": "scissors"},
    "bid": {"alpha": "30", "bravo": "50", "charlie": "10"},
    "vote": {"alpha": "blue", "bravo": "blue", "charlie": "red"},
    "agree": {"alpha": "yes", "bravo": "yes", "charlie": "yes"},
}


def test_sealed_ballots_revealed_and_tallied_by_every_ruleset(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "tallyhall")
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Each player sealed four ballots on its own turn, in roster order.
    seals = chron.kinds("sealed_submit")
    assert [(s["agent"], s["round"]) for s in seals] == [
        (agent, label) for agent in ("alpha", "bravo", "charlie") for label in BALLOTS
    ]
    for seal in seals:
        # Stored as a Fernet token, never as the plain payload.
        assert seal["sealed"].startswith("gAAAAA") and set(seal) == {"round", "agent", "sealed"}
    grants = [(t["round"], t["current"]) for t in run.turns()]
    # The judge rules, then posts its closing line: the realm is over, so that post
    # resumes no rotation and nobody is granted round 2.
    assert grants == [(1, "alpha"), (1, "bravo"), (1, "charlie")]
    assert not [b for b in run.system_posts() if "(round 2)" in b]
    (complete,) = run.turns("round_complete")
    assert complete["completed"] == 1

    # One reveal per ballot, carrying exactly what was sealed; the explicit reveal of
    # "rps" came first and the tallies revealed the rest themselves.
    reveals = chron.kinds("reveal")
    assert [r["round"] for r in reveals] == list(BALLOTS)
    assert {r["round"]: r["submissions"] for r in reveals} == BALLOTS

    tallies = [(t["round"], t["ruleset"], t["kind"], t["result"]) for t in chron.kinds("tally")]
    assert tallies == [
        ("rps", "dominance", "agent", "alpha"),
        ("bid", "high-bid", "agent", "bravo"),
        ("bid", "low-bid", "agent", "charlie"),
        ("vote", "plurality", "option", "blue"),
        ("vote", "majority", "option", "blue"),
        ("vote", "unanimous", "tie", None),
        ("agree", "unanimous", "option", "yes"),
    ]
    details = {(t["round"], t["ruleset"]): t["detail"] for t in chron.kinds("tally")}
    assert details[("bid", "high-bid")] == {
        "bids": {"alpha": 30, "bravo": 50, "charlie": 10},
        "winning_bid": 50,
    }
    assert details[("vote", "majority")]["needed"] == 2
    assert details[("vote", "unanimous")]["counts"] == {"blue": 2, "red": 1}

    # Sealing happened before the round closed, the tallies after it, the verdict last;
    # tallies alone never ended the realm.
    first_seal, complete_at, first_tally, verdict_at, ending = run.order(
        ("sealed_submit", {"agent": "alpha"}),
        ("turn", {"event": "round_complete"}),
        ("tally", {"ruleset": "dominance"}),
        ("verdict", {}),
        ("lifecycle", {"event": "concluding"}),
    )
    assert first_seal < complete_at < first_tally < verdict_at < ending
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "alpha takes the hall" and verdict["issued_by"] == "judge"
    assert "**Outcome:** alpha takes the hall" in run.out
    # The opener's premature rule (min_rounds_before_verdict: 1) was refused, unrecorded.
    rules = re.findall(r"agent=judge role=referee tool=rule result=(\S+)", run.out)
    assert rules == ["dict[error]", "dict[outcome,scoreboard]"], rules
    assert run.said("charlie") == ["charlie has sealed four ballots"]
