"""The Warden's tick fires a due schedule once and posts its wake on the bus (a real
homeserver), again after a restart cut it short, and again until it is acknowledged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event, Message, now_ms
from chronicle.services import record_event
from ledger.services.profiles import seed_profiles
from realms.realmtools.identity import mint_token
from realms.realmtools.models import Schedule, Wake
from realms.realmtools.schedules_wakes import fire_due
from realms.realmtools.server import RealmtoolsServer
from realms.warden.snapshot import build_snapshot
from realms.warden.watch import tick_realm
from tests.realms.warden.test_tick import package, running_realm, wait_for

from .conftest import Agent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _wake_posts(realm_id: str) -> list[str]:
    return list(
        Message.objects.filter(realm_id=realm_id, body__contains="your schedule").values_list(
            "body", flat=True
        )
    )


def _ops(realm_id: str) -> list[str]:
    return [e.payload["op"] for e in Event.objects.filter(realm_id=realm_id, kind=Kind.WAKE)]


def test_a_due_schedule_is_posted_once_across_a_restart_until_read(
    homeserver, platform_server, realm_id, tmp_path: Path, server: RealmtoolsServer
) -> None:
    seed_profiles()
    pkg = package(tmp_path)
    project = pkg / "project.json"
    data = json.loads(project.read_text())
    data["spec"]["mechanics"].append({"kind": "schedules"})
    project.write_text(json.dumps(data))
    realm = running_realm(pkg, realm_id)
    ping = Agent(server, mint_token(realm_id, "ping", "player", ["ping", "pong"]))
    assert "scheduled" in ping.call("schedule", note="look at @pong's word", after="5s")
    tick_realm(realm_id)  # the kickoff; nothing is due yet
    assert _ops(realm_id) == []
    idle_before = build_snapshot(realm_id).last_activity_ms

    # A Warden fired the schedule and died before posting: the restarted one posts the wake
    # it owes and fires nothing again.
    Schedule.objects.filter(realm=realm).update(next_fire_ms=now_ms() - 1)
    assert fire_due(realm_id, private=True) == [1]
    tick_realm(realm_id)
    tick_realm(realm_id)
    wait_for(lambda: len(_wake_posts(realm_id)) == 1, "the wake's post")
    (post,) = _wake_posts(realm_id)
    assert "@ping — your schedule 1 (after 5s) is due." in post
    assert "look at pong's word" in post and "@pong" not in post
    mirrored = Message.objects.get(realm_id=realm_id, body=post)
    assert mirrored.sender_agent == ""  # the system user's post
    assert Wake.objects.get(realm=realm).event_ids == [mirrored.matrix_event_id]
    assert _ops(realm_id) == ["due", "deliver"]
    assert Wake.objects.get(realm=realm).deliveries == 1
    # A wake is not activity for the stall rule; what the agent does about it would be.
    assert build_snapshot(realm_id).last_activity_ms == idle_before

    # Not read within REDELIVER_S: posted again, and marked as such.
    Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
    tick_realm(realm_id)
    wait_for(lambda: len(_wake_posts(realm_id)) == 2, "the second post")
    assert "(delivery 2: not read yet)" in _wake_posts(realm_id)[-1]
    wake = Wake.objects.get(realm=realm)
    # The runtime's trace shows the second post read by a turn its model answered.
    record_event(
        realm_id,
        Kind.TRACE,
        {"agent_id": "ping", "run_id": "r", "seq": 7, "type": "wake", "data": {
            "source": ["message"], "events": [wake.event_ids[-1]]}},
    )  # fmt: skip
    record_event(
        realm_id,
        Kind.TRACE,
        {"agent_id": "ping", "run_id": "r", "seq": 9, "type": "model_response", "data": {}},
    )
    tick_realm(realm_id)
    assert Wake.objects.get(realm=realm).state == "acked"
    Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
    tick_realm(realm_id)
    assert len(_wake_posts(realm_id)) == 2
    assert _ops(realm_id) == ["due", "deliver", "deliver", "ack"]
