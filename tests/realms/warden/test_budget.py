from __future__ import annotations

from decimal import Decimal

import pytest

from chronicle import selectors
from chronicle.kinds import Kind
from ledger.services.keys import mint_virtual_key
from ledger.services.spend import Refusal, reserve, settle
from realms.models import RealmAgent
from realms.warden.budget import enforce_budgets
from realms.warden.snapshot import build_snapshot
from tests.chronicle.realmkit import event, running
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

REALM = "budget-abc123"
T0 = 10_000


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path


def spend(agent: str, usd: float, ts: int):
    event(REALM, Kind.SPEND, {"agent": agent, "usd": usd, "tokens_in": 10, "tokens_out": 5}, ts)


def lifecycle(value: str) -> list[dict[str, object]]:
    return [e.payload for e in selectors.lifecycle_events(REALM, value)]


class Stopper:
    def __init__(self, fail: bool = False):
        self.stopped: list[str] = []
        self.fail = fail

    def __call__(self, agent_id: str) -> None:
        if self.fail:
            raise RuntimeError("sandbox gone")
        self.stopped.append(agent_id)


def realm_with(policy: str, grace: str | None = None):
    budget = {"max_usd": 1.0, "on_exhausted": policy}
    if grace:
        budget["grace_period"] = grace
    build_realm(
        REALM,
        agents=[{"id": "alice", "budget": budget}, {"id": "bob"}],
        name="Budget",
    )
    running(REALM, ts=T0)


def tick(stop: Stopper, now: int):
    return enforce_budgets(build_snapshot(REALM, now_ms=now), stop_agent=stop)


def test_nothing_happens_under_the_cap():
    realm_with("kill")
    spend("alice", 0.99, T0 + 1)
    stop = Stopper()
    assert tick(stop, T0 + 10) == []
    assert stop.stopped == [] and lifecycle("budget_exhausted") == []


def test_starve_records_exhaustion_once_and_never_stops():
    realm_with("starve")
    spend("alice", 0.6, T0 + 1)
    spend("alice", 0.5, T0 + 2)
    stop = Stopper()
    actions = tick(stop, T0 + 10)
    assert [(a.agent_id, a.action, a.policy) for a in actions] == [("alice", "exhausted", "starve")]
    assert lifecycle("budget_exhausted") == [
        {
            "event": "budget_exhausted",
            "agent": "alice",
            "policy": "starve",
            "spend": 1.1,
            "cap": 1.0,
        }
    ]
    for later in (T0 + 20, T0 + 10_000_000):
        assert tick(stop, later) == []
    assert stop.stopped == [] and len(lifecycle("budget_exhausted")) == 1
    assert lifecycle("agent_killed") == []


def test_kill_stops_at_once_and_only_once():
    realm_with("kill")
    spend("alice", 1.0, T0 + 1)
    stop = Stopper()
    actions = tick(stop, T0 + 10)
    assert [a.action for a in actions] == ["exhausted", "killed"]
    assert stop.stopped == ["alice"]
    assert lifecycle("agent_killed") == [
        {"event": "agent_killed", "agent": "alice", "reason": "budget exhausted", "policy": "kill"}
    ]
    assert RealmAgent.objects.get(agent_id="alice").state == RealmAgent.State.KILLED
    assert tick(stop, T0 + 20) == []
    assert stop.stopped == ["alice"] and len(lifecycle("agent_killed")) == 1
    # the killed agent no longer counts as a live participant
    assert build_snapshot(REALM, now_ms=T0 + 30).live_participants == ("bob",)


def test_starve_then_kill_waits_for_the_grace_period():
    realm_with("starve_then_kill", grace="2m")
    spend("alice", 1.5, T0 + 1)
    stop = Stopper()
    assert [a.action for a in tick(stop, T0 + 10)] == ["exhausted"]
    exhausted_at = selectors.lifecycle_events(REALM, "budget_exhausted")[0].ts_ms
    assert tick(stop, exhausted_at + 119_000) == []
    assert stop.stopped == []
    actions = tick(stop, exhausted_at + 120_000)
    assert [(a.action, a.policy) for a in actions] == [("killed", "starve_then_kill")]
    assert stop.stopped == ["alice"]
    assert tick(stop, exhausted_at + 500_000) == []
    assert lifecycle("agent_killed")[0]["policy"] == "starve_then_kill"


def test_a_failed_stop_is_said_once_and_retried():
    realm_with("kill")
    spend("alice", 2.0, T0 + 1)
    failing = Stopper(fail=True)
    assert [a.action for a in tick(failing, T0 + 10)] == ["exhausted", "stop_failed"]
    assert [a.action for a in tick(failing, T0 + 20)] == ["stop_failed"]
    failures = selectors.events(REALM, Kind.SYSTEM).filter(payload__event="agent_stop_failed")
    assert failures.count() == 1
    assert lifecycle("agent_killed") == []
    working = Stopper()
    assert [a.action for a in tick(working, T0 + 30)] == ["killed"]
    assert working.stopped == ["alice"]


def test_an_agent_without_a_cap_is_never_exhausted():
    realm_with("kill")
    spend("bob", 500.0, T0 + 1)
    stop = Stopper()
    assert tick(stop, T0 + 10) == []
    assert stop.stopped == []


def test_spend_caps_and_refusals_come_from_the_gateway_ledger():
    build_realm(REALM, agents=[{"id": "alice", "on_exhausted": "kill"}, {"id": "bob"}])
    running(REALM, ts=T0)
    key, _secret = mint_virtual_key(
        realm_id=REALM,
        agent_id="alice",
        provider="offline",
        model="scripted-small",
        cap_usd=Decimal("0.001"),
        on_exhausted="kill",
    )
    # 0.0006 USD spent through the gateway's own reserve/settle path
    assert reserve(key.pk, REALM, 600_000) is None
    settle(
        key_id=key.pk,
        reserved_nusd=600_000,
        cost_nusd=600_000,
        tokens_in=1000,
        tokens_out=1000,
        latency_ms=5,
        outcome="ok",
        model="scripted-small",
        streamed=False,
    )
    alice = build_snapshot(REALM, now_ms=T0 + 1).agents["alice"]
    assert (alice.spend_usd, alice.cap_usd, alice.exhausted) == (0.0006, 0.001, False)
    stop = Stopper()
    assert tick(stop, T0 + 1) == []
    # the next call cannot fit under the cap: the gateway refuses it, so the agent is
    # exhausted although its spend is still below the cap
    assert reserve(key.pk, REALM, 600_000) == Refusal.EXHAUSTED
    alice = build_snapshot(REALM, now_ms=T0 + 2).agents["alice"]
    assert alice.exhausted and alice.spend_usd < 0.001
    assert [a.action for a in tick(stop, T0 + 2)] == ["exhausted", "killed"]
    assert stop.stopped == ["alice"]
    assert lifecycle("budget_exhausted")[0]["cap"] == 0.001
