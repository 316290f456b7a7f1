"""poker-table: the declared state machine for one hand (hands=1): owner-visible hole
cards, the actor pointer and its wakes, the dealer's wake, and machine_terminal."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

SEATS = ("vega", "orion", "lyra", "rigel", "mira", "nova")  # the deal's seat list
# After rigel the pointer walks the roster (sorted ids), wrapping and skipping who acted.
FOLDS = ("vega", "lyra", "mira", "nova", "orion")
COMMIT = hashlib.sha256(b"pitboss-H1-offline").hexdigest()


def test_poker_table_plays_one_hand_to_the_terminal_state(tmp_path: Path) -> None:
    # A longer grace: the rubric rules right after `finish`, which already ends the realm.
    run = run_corpus_package(
        tmp_path, "poker-table", timeout=150, args=["-p", "hands=1"], BEARPIT_CONCLUDE_GRACE_S="5"
    )
    assert_clean_ending(run, "machine_terminal")
    chron = run.chron
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "the state machine reached done"
    running = chron.kinds("lifecycle")[1]
    assert running["config"]["parameters"] == {"hands": "1"}
    assert "A 1-hand no-limit hold'em table." in running["project"]["spec"]["guidelines"]
    assert chron.kinds("turn") == []

    # The deck was committed before anything was dealt, and each seat's hole cards are
    # the ones the seeded shuffle printed, written for their owner alone.
    game = chron.kinds("game")
    assert game[0] == {
        "op": "set",
        "key": "seed_commit",
        "caller": "pitboss",
        "value": COMMIT,
        "owner": None,
        "from": "waiting",
        "to": "waiting",
        "actor": None,
        "log": "public",
        "wake": [],
    }
    shuffles = [r["output"] for r in chron.kinds("exec_result") if r["agent"] == "pitboss"]
    assert shuffles[0] == COMMIT + "\n"
    cards = shuffles[1].split()
    holes = [(g["owner"], g["value"], g["log"]) for g in game if g.get("key") == "hole"]
    assert holes == [
        (seat, f"{cards[2 * i]} {cards[2 * i + 1]}", "referee") for i, seat in enumerate(SEATS)
    ]

    # Every act in order, and whom it woke: the deal wakes rigel, each act the next actor,
    # and the last fold the dealer (one seat left: the actor wake rule stands down).
    acts = [(g["transition"], g["caller"], g["actor"], g["wake"]) for g in game if g["op"] == "act"]
    after = [*FOLDS[1:], None]
    assert acts == [
        ("deal", "pitboss", "rigel", ["rigel"]),
        ("raise", "rigel", "vega", ["vega"]),
        *[
            ("fold", seat, nxt, [nxt] if nxt else ["pitboss"])
            for seat, nxt in zip(FOLDS, after, strict=True)
        ],
        ("award", "pitboss", None, []),
        ("finish", "pitboss", None, []),
    ]
    assert [(g["from"], g["to"]) for g in game if g["op"] == "act"][-2:] == [
        ("preflop", "settled"),
        ("settled", "done"),
    ]
    assert not [g for g in game if g["op"] in ("reject", "reveal")]  # no showdown, no cards shown
    wakes = [b.split(" ", 1)[1] for b in run.system_posts() if "waiting on you" in b]
    assert wakes == [
        f"@{s} — the machine is waiting on you. Call game_state."
        for s in ("rigel", *FOLDS, "pitboss")
    ]
    for seat in SEATS:
        assert not any(card in body for card in cards for body in run.said(seat))
    # The referee read the floor with table_talk, which referee_reads_commons grants.
    assert (
        "agent=pitboss role=referee tool=table_talk result=dict[cursor,messages,more_before]"
        in run.out
    )

    # The pot settled uncontested: the stacks still sum to 12000, the deltas to zero.
    stacks = [g["value"] for g in game if g.get("key") == "stacks"]
    assert stacks[-1] == {
        "vega": 2000,
        "orion": 1990,
        "lyra": 1980,
        "rigel": 2030,
        "mira": 2000,
        "nova": 2000,
    }
    assert sum(stacks[-1].values()) == 12000
    scores = [(s["agent"], s["delta"]) for s in chron.kinds("score")]
    assert scores == [("rigel", 30), ("lyra", -20), ("orion", -10)]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "rigel wins the table, +30 chips over 1 hands"
    assert verdict["scoreboard"] == {
        "lyra": -20,
        "mira": 0,
        "nova": 0,
        "orion": -10,
        "rigel": 30,
        "vega": 0,
    }
    finished, ruled = run.order(("game", {"transition": "finish"}), ("verdict", {}))
    assert finished < ruled
