"""split-the-pot: private deals under a quota of two per round, sealed splits over rounds,
a reactive banker counting them with run_code and ruling when two match."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

PLAYERS = ("blue", "gold", "red")


def delivered(body: str) -> str:
    """A DM as delivered: the recipient's Matrix mention dropped, ``@<id> text`` kept."""
    return body.split(" ", 1)[1]


def test_split_the_pot_ends_when_two_seal_the_same_split(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "split-the-pot", timeout=150, args=["-p", "pot=$100"])
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # DM rooms for every pair of players, none with the banker; the banker reads none.
    running = chron.kinds("lifecycle")[1]
    assert sorted(running["side_channels"].values()) == ["blue · gold", "blue · red", "gold · red"]

    # Every send_private is recorded; red's third in round 1 is over its quota of two, so it
    # is kept back and the Commons is told once.
    privates = [(p["from"], p["to"]) for p in chron.kinds("private")]
    assert privates == [
        ("blue", "red"),
        ("gold", "red"),
        ("gold", "blue"),
        ("red", "gold"),
        ("red", "blue"),
        ("red", "gold"),
    ]
    dms = {p: [delivered(b) for b in run.said(p) if b.startswith("@bp_")] for p in PLAYERS}
    assert dms == {
        "blue": ["@red Red: seal red=45, gold=10, blue=45 with me and gold is out. Deal?"],
        "gold": [
            "@red Red: red=40, gold=50, blue=10 and we both beat blue.",
            "@blue Blue: red=10, gold=50, blue=40, and red gets nothing.",
        ],
        "red": [
            "@gold Gold: red=45, gold=45, blue=10 next round. Seal it with me.",
            "@blue Blue: thinking about it.",
        ],
    }
    notices = [b for b in run.system_posts() if b.startswith("🔇")]
    assert notices == [
        "🔇 red has used this round's 2 private message(s); further ones this round are "
        "recorded but not delivered."
    ]
    assert not [b for _who, b, _eid in chron.messages if "I will not undercut you" in b]

    # Two rounds of sealed splits, under the labels the rounds give.
    assert [(t["round"], t["current"]) for t in run.turns()][:6] == [
        (r, p) for r in (1, 2) for p in PLAYERS
    ]
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [(f"R{r}-split", p) for r in (1, 2) for p in PLAYERS]
    assert chron.kinds("reveal") == [
        {
            "round": "R1-split",
            "submissions": {
                "blue": "SPLIT: red=45, gold=10, blue=45",
                "gold": "SPLIT: red=40, gold=50, blue=10",
                "red": "SPLIT: red=50, gold=40, blue=10",
            },
        },
        {
            "round": "R2-split",
            "submissions": {
                "blue": "SPLIT: red=45, gold=10, blue=45",
                "gold": "SPLIT: red=45, gold=45, blue=10",
                "red": "SPLIT: red=45, gold=45, blue=10",
            },
        },
    ]

    # run_code checked sums for the players and counted the triples for the banker.
    results = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert sorted(results) == sorted(
        [
            ("blue", 0, "True\n"),
            ("red", 0, "True True\n"),
            ("banker", 0, "[((40, 50, 10), 1), ((45, 10, 45), 1), ((50, 40, 10), 1)]\n"),
            ("banker", 0, "[((45, 45, 10), 2), ((45, 10, 45), 1)]\n"),
        ]
    )

    # No deal in round 1, so no verdict then; the round-2 match is the deal.
    assert run.said("banker")[0].startswith("Round 1: no majority - three different splits")
    scores = {s["agent"]: s["delta"] for s in chron.kinds("score")}
    assert scores == {"red": 45, "gold": 45, "blue": 10}
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "Deal: red=45, gold=45, blue=10 (sealed by gold and red)"
    assert verdict["issued_by"] == "banker"
    assert verdict["scoreboard"] == {"blue": 10, "gold": 45, "red": 45}
    last_seal, second_reveal, ruled = run.order(
        ("sealed_submit", {"round": "R2-split", "agent": "red"}),
        ("reveal", {"round": "R2-split"}),
        ("verdict", {}),
    )
    assert last_seal < second_reveal < ruled
    assert (
        run.said("banker")[-1]
        == "🏁 DEAL DONE - red=45, gold=45, blue=10 - sealed by gold and red."
    )
