"""send_private, remember/recall, turn_status and budget_status."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from ledger.models import VirtualKey

from .conftest import REFEREE

pytestmark = pytest.mark.timeout(60)


def _events(realm, kind):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=kind)]


def test_send_private_records_an_intent_for_the_warden(realms):
    agents = [
        {"id": "orin", "private_messaging": {"enabled": True, "peers": ["vela"]}},
        {"id": "vela"},
        {"id": "zed"},
        REFEREE,
    ]
    realm = realms(agents=agents)
    orin = realms.agent(realm, "orin")
    assert orin.call("send_private", to="@Vela", message=" meet at dawn ") == (
        "Delivered privately to vela."
    )
    assert orin.call("send_private", to="orin", message="hi").startswith("error:")
    assert "empty" in orin.call("send_private", to="vela", message="  ")
    assert "not in this realm" in orin.call("send_private", to="mallory", message="hi")
    assert _events(realm, Kind.PRIVATE) == [{"from": "orin", "to": "vela", "text": "meet at dawn"}]
    # zed shares no room with anyone: the tool is hidden and refused
    zed = realms.agent(realm, "zed")
    assert "send_private" not in zed.tools()
    assert "no private-message rooms" in zed.call("send_private", to="orin", message="psst")


def test_notes_are_private_and_ordered(realms):
    realm = realms()
    orin, vela = realms.agent(realm, "orin"), realms.agent(realm, "vela")
    orin.calls(("remember", {"note": "vela bluffs"}), ("remember", {"note": "R3 was close"}))
    vela.call("remember", note="orin is cautious")
    assert orin.call("recall") == {"notes": ["vela bluffs", "R3 was close"]}
    assert vela.call("recall") == {"notes": ["orin is cautious"]}
    assert "empty" in orin.call("remember", note=" ")


def test_turn_status_reads_the_latest_turn_events(realms):
    plain = realms()
    assert realms.agent(plain, "orin").call("turn_status")["active"] is False

    realm = realms(spec={"turns": {"policy": "one-at-a-time"}})
    orin = realms.agent(realm, "orin")
    assert orin.call("turn_status") == {
        "active": False,
        "detail": "the first turn has not been granted yet",
    }
    order = ["orin", "vela", "zed"]
    record_event(
        realm.realm_id,
        Kind.TURN,
        {"round": 2, "order": order, "position": 1, "current": "vela", "min_rounds": 0},
    )
    record_event(realm.realm_id, Kind.TURN, {"event": "retired", "agent": "zed", "round": 2})
    assert orin.call("turn_status") == {
        "active": True,
        "round": 2,
        "last_completed_round": 1,
        "current": "vela",
        "order": order,
        "done_this_round": ["orin"],
        "upcoming_this_round": ["zed"],
    }
    record_event(
        realm.realm_id,
        Kind.TURN,
        {"event": "round_complete", "completed": 2, "round": 3, "order": order, "current": None},
    )
    status = orin.call("turn_status")
    assert (status["round"], status["last_completed_round"], status["current"]) == (3, 2, None)
    assert status["upcoming_this_round"] == order


def test_budget_status_without_a_key_reports_nothing_spent(realms):
    realm = realms()
    assert realms.agent(realm, "orin").call("budget_status") == {
        "spent_usd": 0.0,
        "cap_usd": None,
        "remaining_usd": None,
        "exhausted": False,
    }


def test_budget_status_reads_the_ledger(realms):
    realm = realms()
    VirtualKey.objects.create(
        key_hash="a" * 64,
        key_prefix="sk-test",
        realm_id=realm.realm_id,
        agent_id="orin",
        provider="scripted",
        model="scripted",
        transport="scripted",
        cap_nusd=2_000_000_000,
        spent_nusd=500_000_000,
        tokens_in=1200,
        tokens_out=300,
    )
    assert realms.agent(realm, "orin").call("budget_status") == {
        "spent_usd": 0.5,
        "cap_usd": 2.0,
        "remaining_usd": 1.5,
        "exhausted": False,
        "tokens_in": 1200,
        "tokens_out": 300,
    }
