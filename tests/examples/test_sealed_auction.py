"""examples/sealed-auction: a high-bid auction, then a low-bid reverse auction."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "sealed-auction"


def test_sealed_auction_awards_the_licence_high_and_the_fuel_low(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Round 1: all three firms sealed a licence bid. Round 2: the licence holder sealed
    # nothing, so the fuel round holds only the other two bids.
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [
        ("licence", "ferrow"),
        ("licence", "gullwing"),
        ("licence", "keelson"),
        ("fuel", "ferrow"),
        ("fuel", "keelson"),
    ]
    assert run.said("gullwing")[-1] == "gullwing holds the licence and does not bid."

    tallies = [(t["round"], t["ruleset"], t["kind"], t["result"]) for t in chron.kinds("tally")]
    assert tallies == [
        ("licence", "high-bid", "agent", "gullwing"),
        ("fuel", "low-bid", "agent", "keelson"),
    ]
    details = [t["detail"] for t in chron.kinds("tally")]
    assert details == [
        {"bids": {"ferrow": 95, "gullwing": 118, "keelson": 80}, "winning_bid": 118},
        {"bids": {"ferrow": 90, "keelson": 78}, "winning_bid": 78},
    ]

    # Profit booked on the audited books: licence 150 - 118, fuel 78 - 55.
    scores = [(s["agent"], s["delta"], s["reason"]) for s in chron.kinds("score")]
    assert scores == [("gullwing", 32, "licence at 118"), ("keelson", 23, "fuel at 78")]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "gullwing ends with the most profit"
    assert verdict["scoreboard"] == {"ferrow": 0, "gullwing": 32, "keelson": 23}

    # Each tally came after its round's last bid, round 2's bids after the licence tally,
    # the verdict after both.
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2]
    last_licence, licence, first_fuel, last_fuel, fuel, verdict_at = run.order(
        ("sealed_submit", {"round": "licence", "agent": "keelson"}),
        ("tally", {"round": "licence"}),
        ("sealed_submit", {"round": "fuel", "agent": "ferrow"}),
        ("sealed_submit", {"round": "fuel", "agent": "keelson"}),
        ("tally", {"round": "fuel"}),
        ("verdict", {}),
    )
    assert last_licence < licence < first_fuel < last_fuel < fuel < verdict_at
