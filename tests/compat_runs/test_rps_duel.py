"""rps-duel: ten rounds of sealed moves (the package's minimum before a verdict), each
revealed, judged with run_code and scored by the referee, then the match ruled."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(300)]

MOVES = [
    ("rock", "scissors", "orin"),
    ("paper", "paper", "draw"),
    ("scissors", "rock", "vela"),
    ("paper", "rock", "orin"),
    ("rock", "paper", "vela"),
    ("scissors", "paper", "orin"),
    ("rock", "rock", "draw"),
    ("paper", "scissors", "vela"),
    ("rock", "scissors", "orin"),
    ("scissors", "paper", "orin"),
]
ROUNDS = [f"R{n}" for n in range(1, 11)]


def test_rps_duel_plays_ten_sealed_rounds_to_the_ruling(tmp_path: Path) -> None:
    run = run_corpus_package(tmp_path, "rps-duel", timeout=270)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron
    assert chron.kinds("lifecycle")[1]["project"]["apiVersion"] == "agentrealm/v1alpha1"

    # Ten rounds, both players sealing on their own turn under the label turn_status gave.
    assert [(t["round"], t["current"]) for t in run.turns()] == [
        (r, p) for r in range(1, 11) for p in ("orin", "vela")
    ]
    assert {t["min_rounds"] for t in chron.kinds("turn")} == {10}
    assert [t["completed"] for t in run.turns("round_complete")] == list(range(1, 11))
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [(label, p) for label in ROUNDS for p in ("orin", "vela")]
    moves = ("rock", "paper", "scissors")
    assert not [b for p in ("orin", "vela") for b in run.said(p) if any(m in b for m in moves)]

    # Each round revealed once with its exact label; the referee's run_code named the
    # winner, and only decisive rounds were scored, to the agent the code printed.
    assert chron.kinds("reveal") == [
        {"round": label, "submissions": {"orin": o, "vela": v}}
        for label, (o, v, _w) in zip(ROUNDS, MOVES, strict=True)
    ]
    judged = [(r["agent"], r["exit_code"], r["output"]) for r in chron.kinds("exec_result")]
    assert judged == [("themis", 0, f"{w}\n") for _o, _v, w in MOVES]
    scores = [(s["agent"], s["delta"], s["reason"]) for s in chron.kinds("score")]
    assert scores == [
        (w, 1, f"round {label}")
        for label, (_o, _v, w) in zip(ROUNDS, MOVES, strict=True)
        if w != "draw"
    ]
    assert chron.kinds("tally") == []  # the rubric forbids tally; reveal + score is the ledger
    notes = [n["text"] for n in chron.kinds("note")]
    assert notes[0] == "R1: orin=rock, vela=scissors -> orin. Score orin 1 vela 0."
    assert notes[-1] == "R10: orin=scissors, vela=paper -> orin. Score orin 5 vela 3."
    reports = run.said("themis")[1:-1]
    assert len(reports) == 9 and reports[1].startswith("Round R2: orin=paper, vela=paper — draw")

    # The verdict came only after round 10 was complete: the package's minimum.
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "orin wins the match 5-3" and verdict["issued_by"] == "themis"
    assert verdict["scoreboard"] == {"orin": 5, "vela": 3}
    tenth, last_score, ruled = run.order(
        ("turn", {"event": "round_complete", "completed": 10}),
        ("score", {"reason": "round R10"}),
        ("verdict", {}),
    )
    assert tenth < last_score < ruled
    assert run.said("themis")[-1] == "🏁 MATCH OVER — orin 5-3."
    assert not [t for t in run.turns() if t["round"] == 11]
