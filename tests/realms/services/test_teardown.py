"""The one teardown: the conclusion, the interruption and a failed provisioning share it."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal

import pytest

from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Event
from ledger.models import VirtualKey
from ledger.services.keys import mint_virtual_key
from realms.forge import layout
from realms.herald.models import BusRealm, BusRoom
from realms.models import Realm
from realms.services.conclude import conclude_realm, finish_conclusion, interrupt_realm
from realms.services.provision import fail_realm
from tests.fixtures.realms import build_realm

pytestmark = pytest.mark.django_db

ARCHIVE_FILES = {"transcript.txt", "report.md", "events.jsonl", "messages.jsonl", "manifest.json"}


def live_realm(realm_id: str, state: str, *, bus: bool = False) -> Realm:
    """A launched realm with keys, a declared output in its shared folder and, if asked,
    a bus whose homeserver cannot be reached."""
    realm = build_realm(
        realm_id,
        name="teardown",
        agents=[{"id": "ping"}, {"id": "pong"}, {"id": "umpire", "role": "referee"}],
        spec={"environment": {"shared_folder": {"enabled": True}}, "outputs": ["report.md"]},
        state=state,
    )
    for agent in realm.run_config["agents"]:
        mint_virtual_key(
            realm_id=realm_id,
            agent_id=agent["id"],
            provider="offline",
            model=agent["model"],
            cap_usd=Decimal("1"),
            on_exhausted="starve",
        )
    shared = layout.shared_dir(realm_id)
    shared.mkdir(parents=True, exist_ok=True)
    (shared / "report.md").write_text("the findings")
    if bus:
        # By hand: provisioning would need a homeserver, and this bus must have none.
        row = BusRealm.objects.create(
            realm_id=realm_id, system_user_id="@sys:test", operator_user_id="@op:test"
        )
        BusRoom.objects.create(bus=row, room_id=f"!{realm_id}:test", kind=BusRoom.Kind.COMMONS)
    return Realm.objects.get(pk=realm.pk)


def conclude(realm: Realm) -> None:
    assert conclude_realm(realm.realm_id, "manual", "stop requested", grace_s=0)


def interrupt(realm: Realm) -> None:
    assert interrupt_realm(realm.realm_id, "restart: sandboxes were gone")


def fail(realm: Realm) -> None:
    fail_realm(realm, "provisioning failed: the test")


CALLERS: dict[str, tuple[str, Callable[[Realm], None], str]] = {
    "conclusion": (Realm.State.RUNNING, conclude, Realm.State.ARCHIVED),
    "interruption": (Realm.State.RUNNING, interrupt, Realm.State.INTERRUPTED),
    "provisioning failure": (Realm.State.PROVISIONING, fail, Realm.State.FAILED),
}


def teardown_errors(realm_id: str, *, announced: bool = True) -> list[dict[str, object]]:
    """``announced=False`` leaves out the conclusion's announcement, for a realm without
    a bus to announce on."""
    return [
        e.payload
        for e in Event.objects.filter(realm_id=realm_id, kind=Kind.LIFECYCLE).order_by("id")
        if e.payload.get("event") == Lifecycle.TEARDOWN_ERROR
        and (announced or e.payload.get("step") not in ("open floor", "announce"))
    ]


@pytest.mark.parametrize("caller", list(CALLERS))
def test_every_caller_runs_the_same_steps_in_order_past_failures(caller, settings):
    settings.BEARPIT_MATRIX_URL = "http://127.0.0.1:9"
    before, end, after = CALLERS[caller]
    realm_id = f"td-{caller.split()[0]}"
    realm = live_realm(realm_id, before, bus=True)
    # A file where the outputs folder goes: capturing fails, and what follows still runs.
    layout.outputs_dir(realm_id).write_text("in the way")
    end(realm)
    assert Realm.objects.get(realm_id=realm_id).state == after
    errors = teardown_errors(realm_id)
    steps = [e["step"] for e in errors]
    announced = ["open floor", "announce"] if caller == "conclusion" else []
    assert steps == [*announced, "capture outputs", "reconcile bus", "close bus"]
    assert all(set(e) == {"event", "step", "detail"} and e["detail"] for e in errors)
    # Keys were revoked before the failing capture; the sandboxes were released after it.
    assert not VirtualKey.objects.filter(realm_id=realm_id, revoked_at__isnull=True).exists()
    assert VirtualKey.objects.filter(realm_id=realm_id).exists()
    assert not layout.shared_dir(realm_id).exists()
    assert (layout.realm_dir(realm_id) / ".released").exists()


@pytest.mark.parametrize("caller", list(CALLERS))
def test_declared_outputs_are_kept_before_the_shared_folder_goes(caller):
    before, end, after = CALLERS[caller]
    realm_id = f"kept-{caller.split()[0]}"
    end(live_realm(realm_id, before))
    assert teardown_errors(realm_id, announced=False) == []
    assert (layout.outputs_dir(realm_id) / "report.md").read_text() == "the findings"
    outputs = [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.OUTPUT)]
    assert [o["path"] for o in outputs] == ["report.md"]
    assert not layout.shared_dir(realm_id).exists()
    assert (layout.archive_dir(realm_id).exists()) == (after == Realm.State.ARCHIVED)


def test_a_teardown_run_again_after_a_crash_keeps_the_first_capture():
    realm_id = "twice-over"
    conclude(live_realm(realm_id, Realm.State.RUNNING))
    finish_conclusion(realm_id, announce_end=False)
    outputs = [e.payload for e in Event.objects.filter(realm_id=realm_id, kind=Kind.OUTPUT)]
    assert [(o["path"], o.get("missing", False)) for o in outputs] == [("report.md", False)]
    assert (layout.archive_dir(realm_id) / "outputs" / "report.md").read_text() == "the findings"


def test_a_concluded_realm_has_its_archive_folder():
    realm_id = "archived-here"
    conclude(live_realm(realm_id, Realm.State.RUNNING))
    folder = layout.archive_dir(realm_id)
    assert {p.name for p in folder.iterdir()} == ARCHIVE_FILES | {"outputs", "logs"}
    assert (folder / "outputs" / "report.md").read_text() == "the findings"
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["state"] == "archived"
    assert manifest["agents"]["ping"]["input_cost_per_token"] is not None
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    assert events[-1]["payload"] == {"event": "archived"}
    assert "## Spend" in (folder / "report.md").read_text()


def test_an_archive_that_cannot_be_written_never_keeps_the_realm_from_archived():
    realm_id = "archive-blocked"
    realm = live_realm(realm_id, Realm.State.RUNNING)
    layout.archive_dir(realm_id).write_text("in the way")
    conclude(realm)
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.ARCHIVED
    assert [e["step"] for e in teardown_errors(realm_id, announced=False)] == ["write archive"]
