"""pit_serve's provisioning thread: it takes the realms the API hands it, and at start
the ones a previous run left pending, and gives each to the provisioning service."""

from __future__ import annotations

import time

import pytest

from realms.management.commands.pit_serve import Provisioner
from realms.models import Realm
from realms.services.queue import open_local_worker
from realms.services.teardown import tear_down
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(90), pytest.mark.django_db(transaction=True)]


def _wait_until_not_pending(realm_id: str, timeout_s: float = 60.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = Realm.objects.get(realm_id=realm_id).state
        if state != Realm.State.PENDING:
            return state
        time.sleep(0.2)
    raise AssertionError(f"{realm_id} still pending after {timeout_s}s")


def test_realms_left_pending_and_realms_handed_over_are_provisioned():
    build_realm("left-abc123", state=Realm.State.PENDING)
    lines: list[str] = []
    provisioner = Provisioner(lines.append).start()
    try:
        # No homeserver here: provisioning fails, and the service records that; what
        # matters is that the realm left the pending state through it.
        assert _wait_until_not_pending("left-abc123") != Realm.State.PENDING
        build_realm("handed-abc123", state=Realm.State.PENDING)
        open_local_worker().put("handed-abc123")
        assert _wait_until_not_pending("handed-abc123") != Realm.State.PENDING
    finally:
        provisioner.stop()
        # Where this worker also has a homeserver, provisioning succeeds and the realms'
        # sandboxes run: stop them and release their mounted homes, as a conclusion does.
        for realm_id in ("left-abc123", "handed-abc123"):
            if Realm.objects.filter(realm_id=realm_id).exists():
                tear_down(realm_id, "the test is over")
    assert "provision: left-abc123 (launched through the API)" in lines
    assert "provision: handed-abc123 (launched through the API)" in lines
