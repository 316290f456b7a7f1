"""The game_* tools and table_talk through the MCP server, state kept in the Chronicle."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from realms.realmtools.machine import service

from .machines import AUCTION, SEALED_VOTE

pytestmark = pytest.mark.timeout(90)


def _spec(machine):
    return {"mechanics": [{"kind": "state-machine", "machine": machine}]}


def _games(realm):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.GAME)]


def test_a_hand_played_through_the_tools(realms):
    realm = realms(spec=_spec(AUCTION))
    ref, orin, vela, zed = (realms.agent(realm, a) for a in ("themis", "orin", "vela", "zed"))

    first = orin.call("game_state")
    assert (first["state"], first["actor"], first["terminal"]) == ("open", None, False)
    assert Event.objects.filter(realm_id=realm.realm_id, kind=Kind.MACHINE).count() == 1
    machine_event = Event.objects.get(realm_id=realm.realm_id, kind=Kind.MACHINE).payload
    assert machine_event["members"]["bidder"] == ["orin", "vela", "zed"]
    assert machine_event["referee"] == "themis"

    ref.calls(
        ("game_set", {"key": "lot", "value": "vase"}),
        ("game_set", {"key": "reserve", "value": 90}),
        ("game_set", {"key": "hand", "value": "Ah", "owner": "orin"}),
        ("game_set", {"key": "hand", "value": "Kd", "owner": "vela"}),
    )
    assert "owner" in ref.call("game_set", key="hand", value="2c")["error"]
    assert "not a declared" in ref.call("game_set", key="colour", value="red")["error"]
    assert "only the referee" in orin.call("game_set", key="lot", value="x")["error"]

    view = ref.call("game_act", transition="start", args={"first": "vela"})
    assert (view["state"], view["actor"]) == ("bidding", "vela")
    assert _games(realm)[-1]["wake"] == ["vela"]

    refused = orin.call("game_act", transition="bid")
    assert refused == {
        "error": "rejected",
        "check": "guards",
        "detail": "guard 'caller_is_actor' does not hold",
    }
    assert _games(realm)[-1]["op"] == "reject"

    vela.call("game_act", transition="pass")
    zed.call("game_act", transition="peek")  # hidden role, referee-only log
    after = zed.call("game_act", transition="pass")
    # orin is the new actor, and with one bidder left the host's rule became true
    assert _games(realm)[-1]["wake"] == ["orin", "themis"]
    assert after["actor"] == "orin"

    # visibility: orin sees its own hand and public keys, never the reserve or the spy's act
    seen = orin.call("game_state")
    assert seen["data"]["hand"] == {"orin": "Ah"}
    assert "reserve" not in seen["data"]
    ops = [(e["op"], e.get("transition") or e.get("key")) for e in seen["log"]]
    assert ("act", "peek") not in ops
    assert ("set", "reserve") not in ops
    assert ("reject", "bid") in ops  # orin's own rejection
    owner_sets = [e for e in seen["log"] if e.get("key") == "hand"]
    assert [e.get("value") for e in owner_sets] == ["Ah"]
    assert ("act", "peek") in [
        (e["op"], e.get("transition")) for e in zed.call("game_state")["log"]
    ]
    ref_view = ref.call("game_state")
    assert ref_view["data"]["reserve"] == 90
    assert ref_view["data"]["hand"] == {"orin": "Ah", "vela": "Kd"}

    closed = ref.call("game_act", transition="close")
    assert closed["state"] == "closed"
    # close reveals the hands still in: orin's, not the passed vela's
    assert zed.call("game_state")["data"]["hand"] == {"orin": "Ah"}
    vela.call("game_act", transition="show")
    assert orin.call("game_state")["data"]["hand"] == {"orin": "Ah", "vela": "Kd"}
    ref.call("game_act", transition="finish")
    assert orin.call("game_state")["terminal"] is True
    assert service.current_state(realm.realm_id) == ("done", True)


def test_state_is_rebuilt_from_the_chronicle_after_a_restart(realms):
    realm = realms(spec=_spec(AUCTION))
    ref, orin = realms.agent(realm, "themis"), realms.agent(realm, "orin")
    ref.call("game_set", key="lot", value="clock")
    ref.call("game_act", transition="start", args={"first": "orin"})
    orin.call("game_act", transition="bid")
    before = ref.call("game_state")
    service.forget()  # what a process restart does to the cache
    again = ref.call("game_state")
    assert {k: again[k] for k in ("state", "actor", "data")} == {
        k: before[k] for k in ("state", "actor", "data")
    }
    assert again["actor"] == "vela"
    assert again["data"]["bids_in"] == ["orin"]


def test_game_state_pages_the_log_by_event_id(realms):
    realm = realms(spec=_spec(AUCTION))
    ref = realms.agent(realm, "themis")
    for n in range(5):
        ref.call("game_set", key="lot", value=f"lot-{n}")
    page = ref.call("game_state", log_limit=2)
    assert [e["value"] for e in page["log"]] == ["lot-3", "lot-4"]
    start = ref.call("game_state", since=0, log_limit=2)
    assert [e["value"] for e in start["log"]] == ["lot-0", "lot-1"]
    rest = ref.call("game_state", since=start["next_since"], log_limit=10)
    assert [e["value"] for e in rest["log"]] == ["lot-2", "lot-3", "lot-4"]
    assert ref.call("game_state", since=rest["next_since"])["log"] == []


def test_escrow_complete_guards_read_the_sealed_escrow(realms):
    realm = realms(spec=_spec(SEALED_VOTE))
    ref = realms.agent(realm, "themis")
    ref.call("game_set", key="ballot", value="V1")
    for voter in ("orin", "vela"):
        realms.agent(realm, voter).call("submit_sealed", round="V1", payload="yes")
    assert ref.call("game_act", transition="count")["check"] == "guards"
    realms.agent(realm, "zed").call("submit_sealed", round="V1", payload="no")
    assert ref.call("game_act", transition="count")["state"] == "counted"


def test_table_talk_reads_only_the_commons(realms):
    realm = realms(spec=_spec(AUCTION))
    for n in range(4):
        Message.objects.create(
            realm_id=realm.realm_id,
            channel="commons",
            sender=f"@x{n}",
            sender_agent="orin",
            body=f"talk {n} " + "x" * 700,
        )
    Message.objects.create(
        realm_id=realm.realm_id, channel="!dm:room", sender="@v", sender_agent="vela", body="dm"
    )
    ref = realms.agent(realm, "themis")
    page = ref.call("table_talk", limit=2)
    assert [m["body"][:6] for m in page["messages"]] == ["talk 2", "talk 3"]
    assert all(len(m["body"]) == 600 for m in page["messages"])
    assert page["more_before"] is True
    assert ref.call("table_talk", since=page["cursor"])["messages"] == []
    assert "only the referee" in realms.agent(realm, "orin").call("table_talk")["error"]


def test_a_quiet_machine_is_due_its_idle_nudge_after_after_s(realms):
    realm = realms(spec=_spec(AUCTION))
    realms.agent(realm, "orin").call("game_state")  # declares the machine
    declared = Event.objects.get(realm_id=realm.realm_id, kind=Kind.MACHINE)
    hosts = tuple(declared.payload["members"]["host"])
    assert hosts

    assert service.due_idle_nudges(realm.realm_id, declared.ts_ms + 239_000) == []
    due = service.due_idle_nudges(realm.realm_id, declared.ts_ms + 240_000)
    assert [(n.rule, n.since_event, n.agents) for n in due] == [(2, declared.pk, hosts)]

    # A move starts a new quiet spell, counted from that move.
    realms.agent(realm, "themis").call("game_set", key="lot", value="vase")
    move = Event.objects.filter(realm_id=realm.realm_id, kind=Kind.GAME).last()
    assert move is not None
    assert service.due_idle_nudges(realm.realm_id, move.ts_ms + 239_000) == []
    (again,) = service.due_idle_nudges(realm.realm_id, move.ts_ms + 240_000)
    assert again.since_event == move.pk
