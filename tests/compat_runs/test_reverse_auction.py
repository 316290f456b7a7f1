"""reverse-auction: one sealed round, the low-bid tally, the contract awarded from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

BIDS = {"athena": "47", "boreas": "41", "cassia": "44"}


def test_reverse_auction_awards_the_lowest_sealed_bid(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "reverse-auction", timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # The buyer opened, then each supplier sealed on its own turn and said no number.
    assert [(t["round"], t["current"]) for t in run.turns()] == [
        (1, "athena"),
        (1, "boreas"),
        (1, "cassia"),
    ]
    assert [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")] == [
        ("final", p) for p in BIDS
    ]
    for supplier in BIDS:
        (line,) = run.said(supplier)
        assert not any(ch.isdigit() for ch in line), line
    # Chronicled sealed (a Fernet token), never in clear, until the reveal.
    for seal in chron.kinds("sealed_submit"):
        assert set(seal) == {"round", "agent", "sealed"} and seal["sealed"].startswith("gAAAAA")

    # reveal, then tally on the revealed round: the low-bid ruleset names boreas, and the
    # detail carries the bids and the winning bid the buyer's rubric reads.
    assert chron.kinds("reveal") == [{"round": "final", "submissions": BIDS}]
    (tally,) = chron.kinds("tally")
    assert (tally["round"], tally["ruleset"]) == ("final", "low-bid")
    assert (tally["kind"], tally["result"]) == ("agent", "boreas")
    assert tally["detail"] == {
        "bids": {"athena": 47, "boreas": 41, "cassia": 44},
        "winning_bid": 41,
    }

    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "boreas wins the contract at 41"
    assert (
        verdict["reasons"] == "bids: athena 47, boreas 41, cassia 44; no tie, nobody disqualified"
    )
    assert verdict["issued_by"] == "buyer"
    revealed, tallied, ruled = run.order(("reveal", {}), ("tally", {}), ("verdict", {}))
    assert revealed < tallied < ruled
    assert run.said("buyer")[-1] == "🏁 CONTRACT AWARDED - boreas wins the contract at 41"
