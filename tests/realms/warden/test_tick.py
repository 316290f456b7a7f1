"""The Warden's tick against a real homeserver: floor, cues, DMs, eliminations, the end.

No sandboxes here: the test speaks for the agents on the bus (as the homeserver sees
them, with the floor's power levels applied) and writes the events realmtools would.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import override_settings

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from chronicle.services import record_event
from ledger.services.profiles import seed_profiles
from realms.forge import layout
from realms.herald.bus import BusAgent, provision_bus
from realms.herald.directory import get_bus, user_of
from realms.herald.homeserver import free_port
from realms.herald.matrix import MatrixError
from realms.herald.posting import post_as_agent
from realms.models import Realm, RealmAgent
from realms.services.launch import LaunchOptions, launch_realm
from realms.services.provision import claim_for_provisioning, mark_running
from realms.warden.models import WardenState
from realms.warden.tick import Stream
from realms.warden.watch import (
    claim_tick,
    finish_concluding,
    release_tick,
    tick_realm,
    watch_realm,
)
from tests.conftest import REPO

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def profiles() -> None:
    # Transactional tests empty the tables (and the seeded profiles) after each test.
    seed_profiles()


def wait_for(check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def package(tmp_path: Path, *, dms: bool = False, outputs: bool = False) -> Path:
    target = tmp_path / "relay"
    shutil.copytree(REPO / "examples" / "toolcheck", target)
    if outputs:
        path = target / "project.json"
        data = json.loads(path.read_text())
        data["spec"]["environment"]["shared_folder"] = {"enabled": True}
        data["spec"]["outputs"] = ["notes/*.md", "final.txt"]
        path.write_text(json.dumps(data))
    if dms:
        for agent in ("ping", "pong"):
            path = target / "agents" / agent / "agent.json"
            data = json.loads(path.read_text())
            data["private_messaging"] = {"enabled": True, "max_per_round": 1}
            path.write_text(json.dumps(data))
    return target


def running_realm(pkg: Path, realm_id: str) -> Realm:
    realm = launch_realm(pkg, LaunchOptions(realm_id=realm_id))
    claim_for_provisioning(realm_id)
    provision_bus(
        realm_id,
        [
            BusAgent(a["id"], a.get("role", "participant"), a.get("private_messaging") or {})
            for a in realm.project["agents"]
        ],
        turns=True,
        allow_side_channels=False,
    )
    RealmAgent.objects.filter(realm=realm).update(state=RealmAgent.State.RUNNING)
    assert mark_running(realm_id) is not None
    return Realm.objects.get(realm_id=realm_id)


def commons(realm_id: str) -> str:
    running = Event.objects.get(realm_id=realm_id, kind=Kind.LIFECYCLE, payload__event="running")
    return str(running.payload["commons_room"])


def said(realm_id: str, needle: str) -> Callable[[], bool]:
    return lambda: Message.objects.filter(realm_id=realm_id, body__contains=needle).exists()


def turns(realm_id: str) -> list[dict[str, object]]:
    return [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.TURN)]


def speak(realm_id: str, agent: str, text: str) -> None:
    post_as_agent(realm_id, agent, commons(realm_id), text)
    wait_for(said(realm_id, text), f"{agent}'s post to be mirrored")


def test_a_driving_referee_round_runs_through_the_tick(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(package(tmp_path, outputs=True), realm_id)
    tick_realm(realm_id)
    wait_for(said(realm_id, "You open the realm"), "the kickoff with the opener cue")
    kickoff = Message.objects.get(realm_id=realm_id, body__contains="Welcome to the realm")
    assert "umpire" in kickoff.body and turns(realm_id) == []
    with pytest.raises(MatrixError):  # muted: players cannot speak before the opener
        post_as_agent(realm_id, "ping", commons(realm_id), "early")

    speak(realm_id, "umpire", "Round R1. First word: teal.")
    tick_realm(realm_id)
    assert turns(realm_id)[-1] == {
        "round": 1,
        "order": ["ping", "pong"],
        "position": 0,
        "current": "ping",
        "min_rounds": 1,
    }
    wait_for(said(realm_id, "@ping — it is your turn (round 1)"), "ping's grant")
    grant = Message.objects.get(realm_id=realm_id, body__contains="@ping — it is your turn")
    assert "[umpire] Round R1. First word: teal." in grant.body
    # The turn is chronicled before the bus hears of it: whatever an agent does on the
    # grant (or a referee on its cue) comes after the turn in the Chronicle.
    (granted,) = Event.objects.filter(realm_id=realm_id, kind=Kind.TURN, payload__current="ping")
    assert granted.ts_ms <= grant.ts_ms
    with pytest.raises(MatrixError):  # the floor is physics: pong is refused
        post_as_agent(realm_id, "pong", commons(realm_id), "me first")

    speak(realm_id, "ping", "⏳ thinking")  # a status line never passes the floor
    tick_realm(realm_id)
    assert turns(realm_id)[-1]["current"] == "ping"
    speak(realm_id, "ping", "teal -> sage")
    tick_realm(realm_id)
    assert turns(realm_id)[-1]["current"] == "pong"
    speak(realm_id, "pong", "sage -> rust")
    tick_realm(realm_id)
    complete = turns(realm_id)[-1]
    assert complete["event"] == "round_complete" and complete["round"] == 2
    wait_for(said(realm_id, "Round 1 is complete"), "the referee's round cue")
    cue = Message.objects.get(realm_id=realm_id, body__contains="Round 1 is complete")
    assert "[ping] teal -> sage" in cue.body and "[pong] sage -> rust" in cue.body

    record_event(
        realm_id, Kind.ELIMINATION, {"agent": "pong", "reason": "t", "issued_by": "umpire"}
    )
    tick_realm(realm_id)
    assert {"event": "removed", "agent": "pong", "by": "referee", "round": 2} in turns(realm_id)
    assert turns(realm_id)[-1]["current"] == "ping"
    stopped = Event.objects.filter(realm_id=realm_id, kind=Kind.SYSTEM, payload__agent="pong")
    assert [e.payload["event"] for e in stopped] == ["agent_stopped"]
    assert RealmAgent.objects.get(realm__realm_id=realm_id, agent_id="pong").state == "eliminated"
    tick_realm(realm_id)  # a second tick repeats nothing
    assert stopped.count() == 1

    notes = layout.shared_dir(realm_id) / "notes"
    notes.mkdir(parents=True)
    (notes / "relay.md").write_text("teal, sage, rust\n")
    record_event(realm_id, Kind.VERDICT, {"outcome": "ping wins", "final": True})
    with override_settings(BEARPIT_CONCLUDE_GRACE_S=0):
        # A worker's tick: it ends the realm, and queues the teardown as its own task
        # (run here in this process, as there is no broker).
        result = watch_realm(realm_id)
    assert result is not None and result.concluded == "referee_verdict"
    realm = Realm.objects.get(realm_id=realm_id)
    assert realm.state == Realm.State.ARCHIVED and realm.outcome == "ping wins"
    lifecycle = Event.objects.filter(realm_id=realm_id, kind=Kind.LIFECYCLE)
    assert [e.payload["event"] for e in lifecycle][-2:] == ["concluding", "archived"]
    wait_for(said(realm_id, "REALM_ENDING — referee_verdict"), "the ending announcement")
    outputs = [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.OUTPUT)]
    assert [o["path"] for o in outputs] == ["notes/relay.md", "final.txt"]
    assert outputs[0]["bytes"] == 17 and len(outputs[0]["sha256"]) == 64
    assert outputs[1]["missing"] is True
    captured = layout.outputs_dir(realm_id) / "notes" / "relay.md"
    assert captured.read_text() == "teal, sage, rust\n"
    assert tick_realm(realm_id) is None  # an archived realm is not ticked


def test_private_messages_are_delivered_with_quotas_and_the_dead_cut_off(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(package(tmp_path, dms=True), realm_id)
    tick_realm(realm_id)
    for text in ("meet me", "again?"):
        record_event(realm_id, Kind.PRIVATE, {"from": "ping", "to": "pong", "text": text})
    record_event(realm_id, Kind.PRIVATE, {"from": "ping", "to": "umpire", "text": "psst"})
    tick_realm(realm_id)
    wait_for(said(realm_id, "@pong meet me"), "the delivered DM")
    delivered = Message.objects.get(realm_id=realm_id, body__contains="meet me")
    assert delivered.sender_agent == "ping" and delivered.channel != commons(realm_id)
    wait_for(said(realm_id, "🔇 ping has used"), "the quota notice")
    assert not Message.objects.filter(realm_id=realm_id, body__contains="again?").exists()
    assert not Message.objects.filter(realm_id=realm_id, body__contains="psst").exists()

    record_event(
        realm_id, Kind.ELIMINATION, {"agent": "pong", "reason": "t", "issued_by": "umpire"}
    )
    state = WardenState.objects.get(realm__realm_id=realm_id)
    state.dms = {}  # a new round's allowance, so only the elimination can stop delivery
    state.save(update_fields=["dms"])
    record_event(realm_id, Kind.PRIVATE, {"from": "ping", "to": "pong", "text": "still there?"})
    tick_realm(realm_id)
    wait_for(said(realm_id, "🚫 pong is out"), "the eliminated notice")
    assert not Message.objects.filter(realm_id=realm_id, body__contains="still there?").exists()


def test_a_private_message_to_an_agent_stopped_for_good_is_not_delivered(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    # Who is out is one rule for the Warden and realmtools: a budget kill counts too.
    running_realm(package(tmp_path, dms=True), realm_id)
    tick_realm(realm_id)
    RealmAgent.objects.filter(realm__realm_id=realm_id, agent_id="pong").update(
        state=RealmAgent.State.KILLED
    )
    record_event(realm_id, Kind.PRIVATE, {"from": "ping", "to": "pong", "text": "anyone?"})
    tick_realm(realm_id)
    wait_for(said(realm_id, "🚫 pong is out"), "the out notice")
    assert not Message.objects.filter(realm_id=realm_id, body__contains="anyone?").exists()


def test_two_workers_never_hold_one_realms_tick(realm_id: str, tmp_path: Path) -> None:
    realm = launch_realm(package(tmp_path), LaunchOptions(realm_id=realm_id))
    Realm.objects.filter(pk=realm.pk).update(state=Realm.State.RUNNING)
    assert claim_tick(realm_id, "w1")
    assert not claim_tick(realm_id, "w2")
    assert claim_tick(realm_id, "w1")  # the holder may renew
    release_tick(realm_id, "w1")
    assert claim_tick(realm_id, "w2")
    assert claim_tick(realm_id, "w1", ttl_s=1) is False
    Realm.objects.filter(pk=realm.pk).update(claimed_until=None)  # w2's claim ran out
    assert claim_tick(realm_id, "w1")
    Realm.objects.filter(pk=realm.pk).update(state=Realm.State.ARCHIVED, claimed_until=None)
    assert not claim_tick(realm_id, "w3")


def test_streams_read_each_row_once_even_when_one_commits_late() -> None:
    realm_id = "stream-test"
    cursors: dict[str, object] = {}
    rows = Event.objects.filter(realm_id=realm_id)
    first = [record_event(realm_id, Kind.PRIVATE, {"n": n}) for n in range(3)]
    stream = Stream(cursors, "private")
    assert [e.payload["n"] for e in stream.read(rows)] == [0, 1, 2]
    stream.commit()
    base = first[-1].id
    Event(id=base + 10, realm_id=realm_id, kind=Kind.PRIVATE, payload={"n": 10}).save()
    stream = Stream(cursors, "private")
    assert [e.payload["n"] for e in stream.read(rows)] == [10]
    stream.commit()
    # Its id was handed out before n=10's, but it became visible only now.
    Event(id=base + 5, realm_id=realm_id, kind=Kind.PRIVATE, payload={"n": 5}).save()
    stream = Stream(cursors, "private")
    assert [e.payload["n"] for e in stream.read(rows)] == [5]
    stream.commit()
    assert Stream(cursors, "private").read(rows) == []


def machine_package(tmp_path: Path) -> Path:
    """toolcheck re-cast as a machine realm whose referee is nudged after 240 quiet seconds."""
    target = tmp_path / "quiet-machine"
    shutil.copytree(REPO / "examples" / "toolcheck", target)
    path = target / "project.json"
    data = json.loads(path.read_text())
    data["spec"]["turns"] = None
    data["spec"]["mechanics"] = [
        {
            "kind": "state-machine",
            "machine": {
                "roles": {"ref": {"members": "referee"}, "players": {"members": "participants"}},
                "states": ["open", "done"],
                "initial": "open",
                "terminal": ["done"],
                "transitions": {"finish": {"from": "open", "to": "done", "by": "ref"}},
                "wake": [{"role": "ref", "after_s": 240}],
            },
        }
    ]
    path.write_text(json.dumps(data))
    return target


def test_a_quiet_machine_nudges_its_after_s_role_once(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(machine_package(tmp_path), realm_id)
    declared = Event.objects.filter(realm_id=realm_id, kind=Kind.MACHINE).last()
    assert declared is not None
    tick_realm(realm_id)
    assert not Event.objects.filter(realm_id=realm_id, payload__event="machine_nudge").exists()

    # The same declaration, chronicled as made five minutes ago: the machine has been
    # quiet for longer than the rule's 240 seconds.
    record_event(realm_id, Kind.MACHINE, declared.payload, ts_ms=declared.ts_ms - 300_000)
    tick_realm(realm_id)
    tick_realm(realm_id)
    nudges = [
        e.payload
        for e in Event.objects.filter(realm_id=realm_id, kind=Kind.SYSTEM)
        if e.payload.get("event") == "machine_nudge"
    ]
    assert [n["agents"] for n in nudges] == [["umpire"]]
    wait_for(said(realm_id, "@umpire — the machine is waiting on you"), "the idle nudge")
    assert (
        Message.objects.filter(
            realm_id=realm_id, body__contains="the machine is waiting on you"
        ).count()
        == 1
    )


def test_a_realm_that_ends_at_this_tick_wakes_and_nudges_nobody(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(machine_package(tmp_path), realm_id)
    declared = Event.objects.filter(realm_id=realm_id, kind=Kind.MACHINE).last()
    assert declared is not None
    tick_realm(realm_id)
    # The idle nudge is due (the machine has been quiet for five minutes), a machine step
    # would wake ping, and the referee has ruled: the realm ends, and nobody is called.
    record_event(realm_id, Kind.MACHINE, declared.payload, ts_ms=declared.ts_ms - 300_000)
    record_event(realm_id, Kind.GAME, {"event": "transition", "wake": ["ping"]})
    record_event(realm_id, Kind.VERDICT, {"outcome": "ping wins", "final": True})
    result = tick_realm(realm_id)
    assert result is not None and result.concluded == "referee_verdict"
    assert not Event.objects.filter(realm_id=realm_id, payload__event="machine_nudge").exists()
    time.sleep(1.0)  # what was posted has had time to be mirrored back
    assert not said(realm_id, "the machine is waiting on you")()


def test_no_floor_is_granted_after_the_final_verdict(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(package(tmp_path), realm_id)
    tick_realm(realm_id)
    speak(realm_id, "umpire", "Round R1. First word: teal.")
    tick_realm(realm_id)
    speak(realm_id, "ping", "teal -> sage")
    tick_realm(realm_id)
    speak(realm_id, "pong", "sage -> rust")
    tick_realm(realm_id)
    wait_for(said(realm_id, "Round 1 is complete"), "the referee's round cue")

    # The referee rules, then posts its closing line: that post would resume the
    # rotation, but the realm is over, so nobody is handed the floor for round 2.
    record_event(realm_id, Kind.VERDICT, {"outcome": "ping wins", "final": True})
    speak(realm_id, "umpire", "🏁 MATCH OVER: ping wins.")
    result = tick_realm(realm_id)
    assert result is not None and result.concluded == "referee_verdict"
    # The tick only claims the conclusion: the teardown, grace period included, is not
    # the tick's to run.
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.CONCLUDING
    assert not said(realm_id, "REALM_ENDING")()
    with override_settings(BEARPIT_CONCLUDE_GRACE_S=0):
        assert finish_concluding(realm_id)
    assert not finish_concluding(realm_id)  # a repeat delivery finds nothing to do
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.ARCHIVED
    wait_for(said(realm_id, "REALM_ENDING — referee_verdict"), "the ending announcement")
    assert not Message.objects.filter(realm_id=realm_id, body__contains="(round 2)").exists()
    assert not [t for t in turns(realm_id) if t.get("current") and t.get("round") == 2]


def test_private_messages_are_delivered_before_the_next_grant(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(package(tmp_path, dms=True), realm_id)
    tick_realm(realm_id)
    speak(realm_id, "umpire", "Round R1. First word: teal.")
    tick_realm(realm_id)
    # ping whispers to pong and passes the floor in one go: in the tick that follows,
    # the whisper reaches pong before pong is told it is its turn, so a runtime waking
    # on the grant already holds the whisper and answers the grant.
    record_event(realm_id, Kind.PRIVATE, {"from": "ping", "to": "pong", "text": "say rust"})
    speak(realm_id, "ping", "teal -> sage")
    tick_realm(realm_id)
    wait_for(said(realm_id, "@pong say rust"), "the delivered DM")
    wait_for(said(realm_id, "@pong — it is your turn (round 1)"), "pong's grant")
    dm = Message.objects.get(realm_id=realm_id, body__contains="@pong say rust")
    grant = Message.objects.get(realm_id=realm_id, body__contains="@pong — it is your turn")
    assert dm.ts_ms < grant.ts_ms


def test_a_driving_referees_machine_kickoff_addresses_only_the_referee(
    homeserver, platform_server, realm_id, tmp_path
) -> None:
    running_realm(machine_package(tmp_path), realm_id)
    tick_realm(realm_id)
    wait_for(said(realm_id, "Welcome to the realm"), "the kickoff")
    kickoff = Message.objects.get(realm_id=realm_id, body__contains="Welcome to the realm")
    bus = get_bus(realm_id)
    umpire, ping, pong = (user_of(bus, a).user_id for a in ("umpire", "ping", "pong"))
    assert umpire in kickoff.body
    assert ping not in kickoff.body and pong not in kickoff.body


def test_floor_moves_a_failed_tick_did_not_make_are_made_once_by_the_next(
    homeserver, platform_server, realm_id, tmp_path, settings
) -> None:
    running_realm(package(tmp_path), realm_id)
    tick_realm(realm_id)
    speak(realm_id, "umpire", "Round R1. First word: teal.")

    # The homeserver is out of reach when the tick comes to hand ping the floor: the
    # turn is already chronicled and the grant waits on the Warden's row.
    reachable = settings.BEARPIT_MATRIX_URL
    settings.BEARPIT_MATRIX_URL = f"http://127.0.0.1:{free_port()}"
    assert tick_realm(realm_id) is None
    state = WardenState.objects.get(realm__realm_id=realm_id)
    assert state.failures == 1
    assert [(m["do"], m["agent"]) for m in state.outbox] == [("grant", "ping")]
    assert [t["current"] for t in turns(realm_id)] == ["ping"]
    assert not said(realm_id, "@ping — it is your turn")()

    settings.BEARPIT_MATRIX_URL = reachable
    tick_realm(realm_id)
    wait_for(said(realm_id, "@ping — it is your turn (round 1)"), "ping's grant")
    assert WardenState.objects.get(realm__realm_id=realm_id).outbox == []
    assert [t["current"] for t in turns(realm_id)] == ["ping"]  # chronicled once
    with pytest.raises(MatrixError):  # the floor moved: pong is refused
        post_as_agent(realm_id, "pong", commons(realm_id), "me first")
    tick_realm(realm_id)
    time.sleep(1.0)  # what a repeat would have posted has had time to be mirrored
    grants = Message.objects.filter(realm_id=realm_id, body__contains="@ping — it is your turn")
    assert grants.count() == 1
