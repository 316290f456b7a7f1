"""Sandbox uids are leased host-wide: another installation's uids, and uids that own
processes, are never handed out; a dead holder's lease is free again."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.conf import settings

from realms.forge import uids
from realms.forge.services import stop_agent_sandbox
from tests.conftest import REPO
from tests.realms.forge.conftest import processes_of, script_request, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

SLEEPER = "import time; time.sleep(300)"

# Another installation's worker on this host: it leases a uid with the same code (its
# own BEARPIT_HOME and database know nothing of ours) and holds it until killed.
OTHER_INSTALLATION = (
    "import sys\n"
    "from realms.forge import uids\n"
    "assert uids.try_lease(int(sys.argv[1]))\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


# The lock itself, whatever processes the uid has.
FLOCK_PROBE = (
    "import fcntl, os, sys\n"
    "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
    "try:\n"
    "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
    "    print('free')\n"
    "except BlockingIOError:\n"
    "    print('held')\n"
)


def _settled(uid: int) -> int:
    """``uid``, once no process of an earlier test's sandbox owns it any more."""
    deadline = time.monotonic() + 10
    while uids.owns_processes(uid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return uid


def _other_installation(uid: int) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", OTHER_INSTALLATION, str(uid)],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_uid_another_installation_holds_is_skipped_until_its_holder_dies(make_realm):
    base = _settled(settings.BEARPIT_SANDBOX_UID_BASE)
    holder = _other_installation(base)
    try:
        first = start(make_realm().realm_id, [script_request("alpha", SLEEPER)])
        assert first[0].host_uid != base, "two installations gave out the same uid"
    finally:
        holder.kill()
        holder.wait()
    # The holder died without letting go: its lease went with it.
    second = start(make_realm().realm_id, [script_request("alpha", SLEEPER)])
    assert second[0].host_uid == base


# A whole second installation: its own BEARPIT_HOME and database, the same uid range,
# one bwrap sandbox running until its stdin closes.
SECOND_INSTALLATION = r"""
import sys, django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from realms.forge.services import AgentSandboxRequest, release_realm, start_agent_sandboxes
from realms.forge.spec import MIB, Limits
limits = Limits(memory_bytes=192 * MIB, cpus=1.0, max_processes=48, disk_bytes=16 * MIB,
                shared_disk_bytes=16 * MIB)
request = AgentSandboxRequest(agent_id="alpha", birth_config="{}",
                              argv=["/bin/sleep", "300"])
rows = start_agent_sandboxes("elsewhere", [request], limits=limits, backend="bwrap")
print(rows[0].host_uid, flush=True)
sys.stdin.read()
release_realm("elsewhere")
"""


def test_two_installations_on_one_host_never_share_a_uid(make_realm, tmp_path):
    base = _settled(settings.BEARPIT_SANDBOX_UID_BASE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEARPIT_")}
    env |= {
        "DJANGO_SETTINGS_MODULE": "bearpit.settings",
        "BEARPIT_HOME": str(tmp_path / "second-home"),
        "BEARPIT_SECRET_KEY": "second-installation-" + "x" * 40,
        "BEARPIT_SANDBOX": "bwrap",
        "BEARPIT_SANDBOX_UID_BASE": str(base),
        "BEARPIT_SANDBOX_UID_COUNT": str(settings.BEARPIT_SANDBOX_UID_COUNT),
    }
    second = subprocess.Popen(
        [sys.executable, "-c", SECOND_INSTALLATION],
        cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert second.stdout is not None
        their_uid = int(second.stdout.readline())
        assert their_uid == base  # the first free uid of the range
        ours = start(make_realm().realm_id, [script_request("alpha", SLEEPER)])
        assert ours[0].host_uid != their_uid, "both installations run an agent as one uid"
    finally:
        assert second.stdin is not None
        second.stdin.close()
        second.wait(timeout=60)
    assert second.returncode == 0


def test_a_uid_that_owns_processes_is_never_handed_out(make_realm):
    base = settings.BEARPIT_SANDBOX_UID_BASE
    squatter = subprocess.Popen(
        ["setpriv", f"--reuid={base}", f"--regid={base}", "--clear-groups", "sleep", "60"]
    )
    try:
        deadline = time.monotonic() + 5
        while not processes_of(base, expect=1) and time.monotonic() < deadline:
            time.sleep(0.02)
        rows = start(make_realm().realm_id, [script_request("alpha", SLEEPER)])
        assert rows[0].host_uid != base
    finally:
        squatter.kill()
        squatter.wait()


def test_a_uid_still_in_use_as_a_realms_group_is_never_handed_out(make_realm):
    """A realm's gid is its first agent's uid; that agent may be gone (eliminated, its
    lease with it) while the rest of its realm still runs with the gid."""
    base = settings.BEARPIT_SANDBOX_UID_BASE
    rest_of_realm = subprocess.Popen(
        ["setpriv", f"--reuid={base + 7}", f"--regid={base}", "--clear-groups", "sleep", "60"]
    )
    try:
        deadline = time.monotonic() + 5
        while not processes_of(base + 7, expect=1) and time.monotonic() < deadline:
            time.sleep(0.02)
        rows = start(make_realm().realm_id, [script_request("alpha", SLEEPER)])
        assert rows[0].host_uid != base
        assert rows[0].host_gid != base  # would share the other realm's group
    finally:
        rest_of_realm.kill()
        rest_of_realm.wait()


def test_a_running_sandbox_holds_its_own_lease(make_realm):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", SLEEPER), script_request("bravo", SLEEPER)])
    for row in rows:
        # Held by the sandbox itself, not by this (platform) process any more.
        assert uids.held_fd(row.host_uid) is None
        probe = subprocess.run(
            [sys.executable, "-c", FLOCK_PROBE, str(uids.lease_dir() / f"{row.host_uid}.lock")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert probe.stdout.strip() == "held", probe
    stop_agent_sandbox(rid, "bravo", "test")
    deadline = time.monotonic() + 10
    while processes_of(rows[1].host_uid, expect=0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uids.try_lease(rows[1].host_uid)  # the sandbox is gone, and its lease with it
    uids.drop(rows[1].host_uid)
    # alpha's uid is also the realm's group, which bravo ran with: only now is it free.
    stop_agent_sandbox(rid, "alpha", "test")
    while processes_of(rows[0].host_uid, expect=0) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert uids.try_lease(rows[0].host_uid)
    uids.drop(rows[0].host_uid)
