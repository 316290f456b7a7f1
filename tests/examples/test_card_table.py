"""examples/card-table: the state machine with owner cards, wake rules, machine_terminal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "card-table"
PLAYERS = ("juno", "kit", "lark")
CARDS = [("5", "11", "10"), ("14", "11", "3"), ("7", "4", "8")]
# Who acts in each hand, in order: the dealer's first player, then the actor pointer's
# roster order, wrapping and skipping who has acted.
ORDER = [("juno", "kit", "lark"), ("kit", "lark", "juno"), ("lark", "juno", "kit")]
THRESHOLD = {"juno": 7, "kit": 9, "lark": 11}


def test_card_table_deals_hidden_cards_wakes_each_actor_and_ends_terminal(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=200)
    assert_clean_ending(run, "machine_terminal")
    chron = run.chron
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "the state machine reached done"

    # The dealer's run_code printed each hand's cards, and those are the cards it dealt.
    shuffles = [r["output"] for r in chron.kinds("exec_result") if r["agent"] == "dealer"]
    assert shuffles == [" ".join(hand) + "\n" for hand in CARDS]
    game = chron.kinds("game")
    dealt = [(g["owner"], g["value"]) for g in game if g["op"] == "set"]
    assert dealt == [pair for hand in CARDS for pair in zip(PLAYERS, hand, strict=True)]

    # Every act, in order, with whom it woke: each player's act wakes the next actor, and the
    # last act of a hand wakes the dealer (the data_set_full rule turning true).
    acts = [(g["transition"], g["caller"], g["wake"]) for g in game if g["op"] == "act"]
    expected: list[tuple[str, str, list[str]]] = []
    for hand, order in enumerate(ORDER):
        expected.append(("deal", "dealer", [order[0]]))
        for i, player in enumerate(order):
            card = int(CARDS[hand][PLAYERS.index(player)])
            move = "bet" if card >= THRESHOLD[player] else "fold"
            expected.append((move, player, [order[i + 1]] if i < 2 else ["dealer"]))
        expected.append(("show", "dealer", []))
        expected.append(("collect", "dealer", []) if hand < 2 else ("finish", "dealer", []))
    assert acts == expected
    assert not [g for g in game if g["op"] == "reject"]
    (finish,) = [g for g in game if g.get("transition") == "finish"]
    assert (finish["from"], finish["to"]) == ("showdown", "done")

    # Owner visibility: before the showdown each player's view held one card, its own.
    for player in PLAYERS:
        said = run.said(player)
        assert len(said) == 3, said
        assert all(line.endswith("cards in my view: 1.") for line in said), said
    wakes = [b.split(" ", 1)[1] for b in run.system_posts() if "machine is waiting" in b]
    assert wakes == [
        f"@{agent} — the machine is waiting on you. Call game_state."
        for order in ORDER
        for agent in (*order, "dealer")
    ]

    # The pots: +B+1 to the best bettor, -2 to other bettors, -1 to each folder.
    scores = [(s["agent"], s["delta"], s["reason"]) for s in chron.kinds("score")]
    assert scores == [
        ("kit", 2.0, "hand 1"),
        ("juno", -1.0, "hand 1"),
        ("lark", -1.0, "hand 1"),
        ("juno", 3.0, "hand 2"),
        ("kit", -2.0, "hand 2"),
        ("lark", -1.0, "hand 2"),
        ("juno", 2.0, "hand 3"),
        ("kit", -1.0, "hand 3"),
        ("lark", -1.0, "hand 3"),
    ]
    totals = {p: sum(d for a, d, _r in scores if a == p) for p in PLAYERS}
    assert totals == {"juno": 4.0, "kit": -1.0, "lark": -3.0}
