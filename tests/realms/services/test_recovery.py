"""What a restarted worker does with the realms the last one left live."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.forge import layout, procs
from realms.models import Realm
from realms.services.conclude import interrupt_realm
from realms.services.recovery import recover_realms
from tests.fixtures.realms import build_realm

pytestmark = pytest.mark.django_db


ROSTER = [{"id": "ping"}, {"id": "pong"}, {"id": "umpire", "role": "referee"}]


def realm_in(state: str, realm_id: str, spec: dict[str, Any] | None = None, **fields: Any) -> Realm:
    return build_realm(realm_id, name="recovery", agents=ROSTER, spec=spec, state=state, **fields)


def lifecycle(realm_id: str) -> list[dict[str, object]]:
    return [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.LIFECYCLE)]


def test_live_realms_are_resumed_or_ended_after_a_restart() -> None:
    realm_in(Realm.State.RUNNING, "lost-sandboxes")
    realm_in(Realm.State.PROVISIONING, "half-built")
    realm_in(
        Realm.State.CONCLUDING,
        "half-concluded",
        conclusion_reason="referee_verdict",
        conclusion_detail="done",
    )
    realm_in(Realm.State.ARCHIVED, "long-over")
    outcome = recover_realms()
    assert outcome == {
        "lost-sandboxes": "interrupted",
        "half-built": "interrupted",
        "half-concluded": "archived",
    }
    states = dict(Realm.objects.values_list("realm_id", "state"))
    assert states == {
        "lost-sandboxes": "interrupted",
        "half-built": "interrupted",
        "half-concluded": "archived",
        "long-over": "archived",
    }
    lost = lifecycle("lost-sandboxes")
    assert lost[0]["event"] == "concluding" and lost[0]["reason"] == "interrupted"
    assert "ping, pong, umpire" in str(lost[0]["detail"])
    assert [p["event"] for p in lost] == ["concluding", "interrupted"]
    assert [p["event"] for p in lifecycle("half-concluded")] == ["archived"]
    assert recover_realms() == {}  # nothing live is left to recover


def test_a_realm_another_live_worker_holds_is_left_alone() -> None:
    until = timezone.now() + timedelta(seconds=30)
    realm_in(Realm.State.RUNNING, "held", claimed_by="other:1", claimed_until=until)
    assert recover_realms() == {}
    assert Realm.objects.get(realm_id="held").state == Realm.State.RUNNING
    # The embedded pit_up knows the holder was itself, and takes it back.
    assert recover_realms(only="held", force=True) == {"held": "interrupted"}


def test_a_claim_held_by_a_dead_process_of_this_host_does_not_count() -> None:
    until = timezone.now() + timedelta(seconds=30)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    host = socket.gethostname()
    realm_in(Realm.State.RUNNING, "orphan", claimed_by=f"{host}:{gone.pid}", claimed_until=until)
    realm_in(Realm.State.RUNNING, "alive", claimed_by=f"{host}:{os.getpid()}", claimed_until=until)
    # The dead worker's realm is recovered (its sandboxes are gone, so interrupted);
    # the realm a live process of this host holds is left alone.
    assert recover_realms() == {"orphan": "interrupted"}
    assert Realm.objects.get(realm_id="alive").state == Realm.State.RUNNING


def test_a_claim_whose_pid_was_reused_does_not_count() -> None:
    # The claim names a pid that runs again, but it is another process: its start differs.
    until = timezone.now() + timedelta(seconds=30)
    host, pid = socket.gethostname(), os.getpid()
    started = procs.start_time(pid)
    assert started is not None
    realm_in(
        Realm.State.RUNNING, "reused", claimed_by=f"{host}:{pid}:{started + 1}", claimed_until=until
    )
    realm_in(Realm.State.RUNNING, "mine", claimed_by=procs.identity(), claimed_until=until)
    assert recover_realms() == {"reused": "interrupted"}
    assert Realm.objects.get(realm_id="mine").state == Realm.State.RUNNING


def test_an_interrupted_realm_keeps_its_declared_outputs() -> None:
    # Teardown deletes the shared folder, so what the package declared is captured first.
    realm_in(
        Realm.State.RUNNING,
        "cut-short",
        spec={
            "environment": {"shared_folder": {"enabled": True}},
            "outputs": ["report.md", "absent.txt"],
        },
    )
    shared = layout.shared_dir("cut-short")
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "report.md").write_text("half done")
    (shared / "scratch.txt").write_text("undeclared")
    assert interrupt_realm("cut-short", "restart: sandboxes were gone")
    assert (layout.outputs_dir("cut-short") / "report.md").read_text() == "half done"
    outputs = [e.payload for e in Event.objects.filter(realm_id="cut-short", kind=Kind.OUTPUT)]
    assert [(o["path"], o.get("missing", False)) for o in outputs] == [
        ("report.md", False),
        ("absent.txt", True),
    ]
    assert not shared.exists()
    assert not (layout.outputs_dir("cut-short") / "scratch.txt").exists()
