"""Provisioning against the real homeserver and gateway tables; failure tears down."""

from __future__ import annotations

import signal
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from chronicle.kinds import Kind
from chronicle.models import Event
from ledger.models import VirtualKey
from ledger.services.profiles import seed_profiles
from realms.forge import layout, procs, quota
from realms.forge.models import Sandbox
from realms.herald.models import BusRealm
from realms.models import Realm
from realms.services.conclude import interrupt_realm
from realms.services.launch import LaunchOptions, launch_realm
from realms.services.provision import (
    ProvisionError,
    mark_running,
    offline_script,
    provision_realm,
)
from tests.conftest import REPO

TOOLCHECK = REPO / "examples" / "toolcheck"
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def profiles() -> None:
    seed_profiles()


def lifecycle(realm_id: str) -> list[str]:
    return [
        e.payload["event"] for e in Event.objects.filter(realm_id=realm_id, kind=Kind.LIFECYCLE)
    ]


def test_a_failed_sandbox_start_tears_everything_down(homeserver, platform_server, realm_id):
    launch_realm(TOOLCHECK, LaunchOptions(realm_id=realm_id))
    with (
        override_settings(BEARPIT_SANDBOX="docker", BEARPIT_DOCKER_URL="unix:///nonexistent.sock"),
        pytest.raises(ProvisionError),
    ):
        provision_realm(realm_id)
    realm = Realm.objects.get(realm_id=realm_id)
    assert realm.state == Realm.State.FAILED
    assert realm.conclusion_detail.startswith("provisioning failed:")
    events = lifecycle(realm_id)
    assert events[0] == "provisioning" and events[-1] == "failed"
    keys = VirtualKey.objects.filter(realm_id=realm_id)
    assert keys.count() == 3 and not keys.filter(revoked_at__isnull=True).exists()
    assert BusRealm.objects.get(realm_id=realm_id).closed_at is not None
    # A second delivery of the task finds nothing pending and does nothing.
    assert provision_realm(realm_id) is None
    assert mark_running(realm_id) is None


def test_a_bus_failure_stops_the_runtimes_started_early(homeserver, platform_server, realm_id):
    """Sandboxes start while the bus is provisioned; when the bus fails, none is left
    running and no home stays mounted."""
    launch_realm(TOOLCHECK, LaunchOptions(realm_id=realm_id))
    with (
        override_settings(BEARPIT_MATRIX_URL="http://127.0.0.1:9"),
        pytest.raises(ProvisionError),
    ):
        provision_realm(realm_id)
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.FAILED
    rows = Sandbox.objects.filter(realm_id=realm_id)
    assert rows.count() == 3, "the sandboxes were started alongside the bus"
    assert not rows.filter(state__in=Sandbox.LIVE_STATES).exists()
    for row in rows:
        assert not procs.is_same_process(row.pid, row.pid_start_time)
        assert not quota.is_mounted(layout.home_dir(realm_id, row.agent_id))


@pytest.fixture
def silent_homeserver() -> Iterator[str]:
    """A homeserver URL that takes connections and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def _interrupt_when_sandboxes_start(realm_id: str) -> threading.Thread:
    """Ctrl-C, as the foreground commands' handler raises it, once sandboxes are starting."""
    main = threading.main_thread().ident
    assert main is not None

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if Sandbox.objects.filter(realm_id=realm_id).exists():
                signal.pthread_kill(main, signal.SIGUSR1)
                return
            time.sleep(0.02)

    return threading.Thread(target=watch, daemon=True)


def test_ctrl_c_while_the_bus_is_provisioned_leaves_nothing_starting(
    homeserver, platform_server, realm_id, silent_homeserver
):
    """The caller tears down after Ctrl-C; by then no sandbox may still be on its way up."""
    launch_realm(TOOLCHECK, LaunchOptions(realm_id=realm_id))

    def ctrl_c(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGUSR1, ctrl_c)
    watcher = _interrupt_when_sandboxes_start(realm_id)
    try:
        with override_settings(BEARPIT_MATRIX_URL=silent_homeserver):
            watcher.start()
            with pytest.raises(KeyboardInterrupt):
                provision_realm(realm_id)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert not [t for t in threading.enumerate() if t.name == "realm-sandboxes"]
    # Not failed: an interruption is the caller's to record.
    assert Realm.objects.get(realm_id=realm_id).state == Realm.State.PROVISIONING
    assert interrupt_realm(realm_id, "interrupted by the operator before the realm ran")
    rows = Sandbox.objects.filter(realm_id=realm_id)
    assert rows.count() == 3
    assert not rows.filter(state__in=Sandbox.LIVE_STATES).exists()
    for row in rows:
        assert not procs.is_same_process(row.pid, row.pid_start_time)


def test_keys_carry_the_packages_offline_scripts() -> None:
    script = offline_script(str(TOOLCHECK), "umpire")
    assert script is not None and "You open the realm" in script
    assert offline_script(str(TOOLCHECK), "nobody") is None
    assert offline_script("", "umpire") is None
