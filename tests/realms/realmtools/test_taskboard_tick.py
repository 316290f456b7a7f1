"""The Warden's tick hands a task whose lease ran out back to the pool (a real homeserver)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from ledger.services.profiles import seed_profiles
from realms.realmtools.identity import mint_token
from realms.realmtools.models import Task
from realms.realmtools.server import RealmtoolsServer
from realms.warden.watch import tick_realm
from tests.realms.warden.test_tick import package, running_realm

from .conftest import Agent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_a_tick_expires_a_stale_lease_and_keeps_a_fresh_one(
    homeserver, platform_server, realm_id, tmp_path: Path, server: RealmtoolsServer
) -> None:
    seed_profiles()
    pkg = package(tmp_path)
    project = pkg / "project.json"
    data = json.loads(project.read_text())
    data["spec"]["mechanics"].append({"kind": "task-board", "lease": "30s"})
    project.write_text(json.dumps(data))
    realm = running_realm(pkg, realm_id)
    ping = Agent(server, mint_token(realm_id, "ping", "player", ["ping", "pong"]))
    ping.call("task_add", title="stale")
    ping.call("task_add", title="fresh")
    ping.call("task_claim", id=1)
    ping.call("task_claim", id=2)
    # Task 1's lease ran out a second ago; task 2's has 30 seconds left.
    Task.objects.filter(realm=realm, number=1).update(lease_until_ms=1)
    tick_realm(realm_id)
    states = dict(Task.objects.filter(realm=realm).values_list("number", "state"))
    assert states == {1: "open", 2: "claimed"}
    expired = [
        e.payload
        for e in Event.objects.filter(realm_id=realm_id, kind=Kind.TASK)
        if e.payload["op"] == "expire"
    ]
    assert [(e["task"], e["claimant"]) for e in expired] == [(1, "ping")]
    tick_realm(realm_id)  # nothing more to expire, nothing chronicled twice
    assert (
        Event.objects.filter(realm_id=realm_id, kind=Kind.TASK, payload__op="expire").count() == 1
    )
