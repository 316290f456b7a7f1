"""examples/scarce-budget: three token budgets, each with its own policy, run out mid-game."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import RealmRun, assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scarce-budget"
# budget.max_tokens x the offline small tier's output price (4e-7 USD a token).
CAPS = {"ashby": 4820 * 4e-7, "brisk": 5860 * 4e-7, "corran": 6460 * 4e-7}


def lifecycle(run: RealmRun, event: str) -> dict[str, dict[str, object]]:
    return {str(p["agent"]): p for p in run.chron.kinds("lifecycle") if p.get("event") == event}


def test_scarce_budget_kill_starve_then_kill_and_starve_each_show(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=150)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    exhausted = lifecycle(run, "budget_exhausted")
    assert {a: p["policy"] for a, p in exhausted.items()} == {
        "ashby": "kill",
        "brisk": "starve_then_kill",
        "corran": "starve",
    }
    for crew, payload in exhausted.items():
        assert payload["cap"] == pytest.approx(CAPS[crew])
        # The cap was not reached: the gateway refused the next call because its worst case
        # (the prompt and a full max_tokens reply) no longer fitted.
        assert 0 < float(str(payload["spend"])) < CAPS[crew]
    assert [s["agent"] for s in chron.kinds("spend") if s["agent"] == "ashby"] == ["ashby"]

    # kill removes at once; starve_then_kill after its 5 s grace; starve never.
    killed = lifecycle(run, "agent_killed")
    assert sorted(killed) == ["ashby", "brisk"]
    (ashby_out,) = run.event_ms("lifecycle", event="budget_exhausted", agent="ashby")
    (ashby_killed,) = run.event_ms("lifecycle", event="agent_killed", agent="ashby")
    assert ashby_killed - ashby_out < 2000
    (brisk_out,) = run.event_ms("lifecycle", event="budget_exhausted", agent="brisk")
    (brisk_killed,) = run.event_ms("lifecycle", event="agent_killed", agent="brisk")
    assert brisk_killed - brisk_out >= 5000
    removed = [(t["agent"], t["by"], t["round"]) for t in run.turns("removed")]
    assert removed == [("ashby", "platform", 2), ("brisk", "platform", 3)]
    # corran sealed claims-3, then could not pay for its post: the silence skipped it, and
    # it stayed in the realm.
    assert run.turns("skipped") == [{"event": "skipped", "agent": "corran", "round": 3}]
    assert run.turns("retired") == []
    sealed_3, corran_out = run.order(
        ("sealed_submit", {"round": "claims-3", "agent": "corran"}),
        ("lifecycle", {"event": "budget_exhausted", "agent": "corran"}),
    )
    assert sealed_3 < corran_out
    assert len(run.said("corran")) == 2 and len(run.said("ashby")) == 1

    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [("claims-2", "brisk"), ("claims-2", "corran"), ("claims-3", "corran")]
    assert [(r["round"], r["submissions"]) for r in chron.kinds("reveal")] == [
        ("claims-2", {"brisk": "7", "corran": "6"}),
        ("claims-3", {"corran": "5"}),
    ]
    assert [(s["agent"], s["delta"]) for s in chron.kinds("score")] == [("corran", 5.0)]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "berths: corran 5; the rest get none"
    assert verdict["issued_by"] == "harbourmaster"
    assert "claims-2 total 13 of 12: void." in run.said("harbourmaster")[2]
