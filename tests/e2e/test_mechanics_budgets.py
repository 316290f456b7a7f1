"""Budget policies (starve, starve_then_kill, kill) and the budget-driven endings.

Every agent's script answers each call with another tool call, so it keeps calling
the gateway until the nominal prices of the offline provider reach its tiny cap and
the gateway refuses it. The Warden then applies the agent's policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import RealmRun, assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]

CAP = 0.002


def lifecycle(run: RealmRun, event: str) -> dict[str, dict[str, object]]:
    return {str(p["agent"]): p for p in run.chron.kinds("lifecycle") if p.get("event") == event}


def spent_before_refusal(run: RealmRun, agent: str) -> float:
    spends = [s for s in run.chron.kinds("spend") if s.get("agent") == agent]
    assert spends, f"{agent} never spent"
    return max(float(s["cumulative"]) for s in spends)


def test_each_budget_policy_then_the_duration_ends_the_realm(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "famine")
    assert_clean_ending(run, "duration")

    exhausted = lifecycle(run, "budget_exhausted")
    assert {a: p["policy"] for a, p in exhausted.items()} == {
        "miser": "starve",
        "doomed": "kill",
        "lingerer": "starve_then_kill",
    }
    for agent, payload in exhausted.items():
        assert payload["cap"] == CAP
        # Real calls were metered before the gateway refused the next one.
        assert 0 < spent_before_refusal(run, agent) <= CAP
    killed = lifecycle(run, "agent_killed")
    assert set(killed) == {"doomed", "lingerer"}, killed
    assert all(p["reason"] == "budget exhausted" for p in killed.values())
    assert killed["lingerer"]["policy"] == "starve_then_kill"

    # kill stops at once; starve_then_kill waits out its 4s grace; starve never stops.
    (doomed_out,) = run.event_ms("lifecycle", event="budget_exhausted", agent="doomed")
    (doomed_killed,) = run.event_ms("lifecycle", event="agent_killed", agent="doomed")
    assert doomed_killed - doomed_out < 2000
    (lingerer_out,) = run.event_ms("lifecycle", event="budget_exhausted", agent="lingerer")
    (lingerer_killed,) = run.event_ms("lifecycle", event="agent_killed", agent="lingerer")
    assert lingerer_killed - lingerer_out >= 4000
    (concluding,) = run.event_ms("lifecycle", event="concluding")
    assert lingerer_killed < concluding
    (detail,) = [p["detail"] for p in run.chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert detail == "time limit 25s reached"


def test_every_participant_killed_ends_with_no_active_participants(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "drought")
    assert_clean_ending(run, "no_active_participants")
    assert set(lifecycle(run, "agent_killed")) == {"first", "second"}
    (detail,) = [p["detail"] for p in run.chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert detail == "every participant has been stopped"
    last_kill = max(run.event_ms("lifecycle", event="agent_killed"))
    (concluding,) = run.event_ms("lifecycle", event="concluding")
    assert last_kill <= concluding


def test_a_spent_cap_ends_the_realm_as_budget_exhausted(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "thirst")
    assert_clean_ending(run, "budget_exhausted")
    (exhausted,) = lifecycle(run, "budget_exhausted").values()
    assert exhausted["agent"] == "sipper" and exhausted["policy"] == "starve"
    assert lifecycle(run, "agent_killed") == {}
    (detail,) = [p["detail"] for p in run.chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert detail.startswith("sipper spent $") and detail.endswith(f"of its ${CAP:.4f} cap")
