"""Live realms for the ending tests, and the three ways a realm ends."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from chronicle.kinds import Kind, Lifecycle
from chronicle.models import Event
from ledger.services.keys import mint_virtual_key
from realms.forge import layout
from realms.herald.models import BusRealm, BusRoom
from realms.models import Realm
from realms.services.conclude import conclude_realm, interrupt_realm
from realms.services.provision import fail_realm
from tests.fixtures.realms import build_realm

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
