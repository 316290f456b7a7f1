"""param-relay: parameters bound at launch into the prose, one sealed round, a verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat_runs.corpus import run_corpus_package
from tests.e2e.test_mechanics_run import assert_clean_ending

pytestmark = [pytest.mark.compat, pytest.mark.slow, pytest.mark.timeout(180)]

GIVEN = {"team_name": "Harbour Two", "category": "vegetable", "tone": "formal"}


def test_param_relay_binds_its_parameters_and_ends_on_the_verdict(tmp_path: Path) -> None:
    args = [a for name, value in GIVEN.items() for a in ("-p", f"{name}={value}")]
    run = run_corpus_package(tmp_path, "param-relay", timeout=150, args=args)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Given values win; the rest fall back to their defaults, the manifest's seed_word
    # over the inline APPLE.
    running = chron.kinds("lifecycle")[1]
    assert running["config"]["parameters"] == {
        **GIVEN,
        "seed_word": "MANGO",
        "tiebreak_winner": "alto",
    }
    # Bound into the prose the agents were born with, never left as placeholders.
    project = running["project"]
    assert project["metadata"]["description"].startswith(
        "A ONE-round vegetable relay for Harbour Two."
    )
    assert "The umpire seeds the word MANGO." in project["spec"]["guidelines"]
    assert project["spec"]["restrictions"].endswith("Tone for this run: formal.")
    agents = {a["id"]: a for a in project["agents"]}
    assert agents["alto"]["goals"] == [
        "Relay a vegetable word for Harbour Two without breaking the chain."
    ]
    assert agents["warden"]["rubric"].endswith("Tie-break in favour of alto.")
    assert "${" not in str(project)

    # One round, the referee opening it; each player sealed before its relay line.
    assert [(t["round"], t["current"]) for t in run.turns()] == [(1, "alto"), (1, "basso")]
    assert [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")] == [
        ("R1", "alto"),
        ("R1", "basso"),
    ]
    assert run.said("alto") == ["MANGO -> carrot"] and run.said("basso") == ["carrot -> leek"]
    assert chron.kinds("reveal") == [
        {"round": "R1", "submissions": {"alto": "carrot", "basso": "leek"}}
    ]
    scores = [(s["agent"], s["delta"], s["reason"]) for s in chron.kinds("score")]
    assert scores == [
        ("alto", 1, "clean relay: MANGO -> carrot"),
        ("basso", 1, "clean relay: carrot -> leek"),
    ]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "alto wins the relay" and verdict["issued_by"] == "warden"
    assert verdict["scoreboard"] == {"alto": 1, "basso": 1}
    assert run.realm["outcome"] == "alto wins the relay"
    sealed, revealed, ruled = run.order(
        ("sealed_submit", {"agent": "basso"}), ("reveal", {}), ("verdict", {})
    )
    assert sealed < revealed < ruled
