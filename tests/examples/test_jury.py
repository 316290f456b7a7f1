"""examples/jury: private briefs as agent resources, sealed votes, a unanimous tally."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jury"
JURORS = ("oduya", "pell", "quinn")
# A line only each juror's own evidence holds.
OWN = {
    "oduya": "Statement of Derek Marsh",
    "pell": "Report of the county fire investigator",
    "quinn": "Carrick Electrical",
}


def test_jury_reads_private_evidence_and_agrees_unanimously(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Each juror read its resources in its own sandbox: the shared case and its own
    # evidence are there, and nobody else's evidence is.
    results = {r["agent"]: r for r in chron.kinds("exec_result")}
    assert sorted(results) == list(JURORS)
    for juror, result in results.items():
        assert result["exit_code"] == 0, result
        listing, _, evidence = result["output"].partition("\n")
        assert ast.literal_eval(listing) == ["case.md", "evidence.md"]
        assert OWN[juror] in evidence
        assert [other for other, line in OWN.items() if line in evidence] == [juror]

    # Two sealed votes each, in roster order, after the reading round.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants == [(r, j) for r in (1, 2, 3) for j in JURORS]
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [(label, j) for label in ("vote-2", "vote-3") for j in JURORS]

    # unanimous: a 2-1 split is a tie with no result; the second vote is one option.
    tallies = [(t["round"], t["ruleset"], t["kind"], t["result"]) for t in chron.kinds("tally")]
    assert tallies == [
        ("vote-2", "unanimous", "tie", None),
        ("vote-3", "unanimous", "option", "not guilty"),
    ]
    assert [t["detail"]["counts"] for t in chron.kinds("tally")] == [
        {"guilty": 1, "not guilty": 2},
        {"not guilty": 3},
    ]
    (vote_2, vote_3) = chron.kinds("reveal")
    assert vote_2["submissions"]["oduya"] == "guilty"
    assert vote_3["submissions"] == dict.fromkeys(JURORS, "not guilty")

    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the jury finds Tamsin Lowe not guilty"
    assert verdict["issued_by"] == "judge"
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2, 3]
    tally_2, first_vote_3, last_vote_3, tally_3, verdict_at = run.order(
        ("tally", {"round": "vote-2"}),
        ("sealed_submit", {"round": "vote-3", "agent": "oduya"}),
        ("sealed_submit", {"round": "vote-3", "agent": "quinn"}),
        ("tally", {"round": "vote-3"}),
        ("verdict", {}),
    )
    assert tally_2 < first_vote_3 < last_vote_3 < tally_3 < verdict_at
