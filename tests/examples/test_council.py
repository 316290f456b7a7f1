"""examples/council: a secret ballot counted by plurality, a runoff on a tie, parameters."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "council"
COUNCIL = ("ayo", "brenna", "cosmo", "dagny", "emeka")


def test_council_ties_on_the_ballot_and_chooses_in_the_runoff(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150, args=["-p", "town=Harrowgate"])
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # The supplied town and the manifest's default options were bound into the prose.
    running = chron.kinds("lifecycle")[1]
    assert running["config"]["parameters"] == {
        "town": "Harrowgate",
        "options": "footbridge, library, market",
    }
    (kickoff,) = [b for b in run.system_posts() if "council of Harrowgate" in b]
    assert "chosen from: footbridge, library, market." in kickoff and "Wexmoor" not in kickoff

    # A debate round, the ballot and the runoff, everyone in roster order each time.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, c) for r in (1, 2, 3) for c in COUNCIL]
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [(label, c) for label in ("ballot", "runoff") for c in COUNCIL]

    # Plurality: a 2-2-1 ballot is a tie with no result; the runoff has a unique top.
    tallies = [(t["round"], t["ruleset"], t["kind"], t["result"]) for t in chron.kinds("tally")]
    assert tallies == [
        ("ballot", "plurality", "tie", None),
        ("runoff", "plurality", "option", "library"),
    ]
    counts = [t["detail"]["counts"] for t in chron.kinds("tally")]
    assert counts == [
        {"footbridge": 2, "library": 2, "market": 1},
        {"footbridge": 2, "library": 3},
    ]
    # The ballots stayed secret until the tallies opened them.
    (ballot_reveal, runoff_reveal) = chron.kinds("reveal")
    assert ballot_reveal["submissions"]["emeka"] == "market"
    assert runoff_reveal["submissions"]["emeka"] == "library"
    for who in COUNCIL:
        assert run.said(who)[1:] == ["I have voted.", "I have voted."]

    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the council chooses the library"
    assert verdict["issued_by"] == "clerk"
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2, 3]
    ballot, last_runoff_vote, runoff, verdict_at = run.order(
        ("tally", {"round": "ballot"}),
        ("sealed_submit", {"round": "runoff", "agent": "emeka"}),
        ("tally", {"round": "runoff"}),
        ("verdict", {}),
    )
    assert ballot < last_runoff_vote < runoff < verdict_at
