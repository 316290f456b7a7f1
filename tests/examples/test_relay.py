"""examples/relay: parameters bound into the prose, cooperative turns, a reactive referee."""

from __future__ import annotations

from pathlib import Path

import pytest

from realms.packages.loader import load_package
from realms.packages.parameters import validate_parameter_values
from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relay"
WRITERS = ("amber", "basil", "cedar")


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_relay_runs_its_default_rounds_to_the_editors_verdict(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # The parameters were bound to their defaults, recorded on the running event, and
    # the prose the writers were handed carries the bound values.
    running = chron.kinds("lifecycle")[1]
    bound = {"topic": "a lighthouse that went dark", "rounds": "2"}
    assert running["config"]["parameters"] == bound
    (kickoff,) = [b for b in run.system_posts() if "story relay about" in b]
    assert "a story relay about a lighthouse that went dark" in kickoff
    assert "runs for 2 rounds" in kickoff and "${" not in kickoff

    # Two full rounds in roster order, each writer passing once per round.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants[:6] == [(r, w) for r in (1, 2) for w in WRITERS]
    assert [t["completed"] for t in run.turns("round_complete")][:2] == [1, 2]
    for writer in WRITERS:
        assert len(run.said(writer)) == 2, run.said(writer)

    # The referee is reactive: round 2 was granted without waiting for it to post, and
    # its cue carried the round's passages, since it is gated in a turns realm.
    cue = [b for b in run.system_posts() if "@editor Round 1 is complete" in b]
    assert len(cue) == 1
    assert f"[amber] {run.said('amber')[0]}" in cue[0]
    assert f"[cedar] {run.said('cedar')[0]}" in cue[0]
    last_passage, first_score = run.message_ms("cedar")[0], run.event_ms("score")[0]
    assert last_passage <= first_score

    # Every passage kept the thread: one point each per round, and the verdict carries them.
    scores = [(s["agent"], s["delta"]) for s in chron.kinds("score")]
    assert scores == [(w, 1) for w in WRITERS] * 2
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the story is told" and verdict["issued_by"] == "editor"
    assert verdict["scoreboard"] == {"amber": 2, "basil": 2, "cedar": 2}
    assert run.message_ms("cedar")[1] <= run.event_ms("verdict")[0]
    # Until it ruled the editor said nothing, yet round 2 ran: a reactive referee's round
    # waits for no post of its own, as a driving referee's does.
    assert run.said("editor") == ["Title: The Key to Carrow Point"]


def test_relay_parameters_refuse_values_outside_their_metadata() -> None:
    loaded = load_package(EXAMPLE)
    assert loaded.ok and not loaded.warnings
    params = {p.name: p for p in loaded.parameters}
    assert list(params) == ["topic", "rounds"]
    assert validate_parameter_values(loaded.parameters, {"rounds": "5"}) == []
    assert validate_parameter_values(loaded.parameters, {"rounds": "0"}) == [
        'rounds: expected at least 1; got "0"'
    ]
    assert validate_parameter_values(loaded.parameters, {"rounds": "2.5"}) != []
    (problem,) = validate_parameter_values(loaded.parameters, {"topic": "a dragon"})
    assert problem.startswith("topic: expected one of a lighthouse that went dark, ")
