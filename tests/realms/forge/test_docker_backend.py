"""The docker backend against a real engine: podman's Docker-compatible service and the
agent image built from deploy/ (tests/fixtures/podman.py provides both)."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import docker
import pytest

from realms.forge import layout
from realms.forge.backends.docker import DockerBackend, container_name, network_name
from realms.forge.models import Sandbox
from realms.forge.reap import reap
from realms.forge.runcode import run_code
from realms.forge.services import (
    AgentSandboxRequest,
    ForgeError,
    deliver_birth,
    handle_for,
    reattach,
    release_realm,
    sandbox_alive,
    spec_for,
    stop_agent_sandbox,
)
from realms.models import Realm
from tests.realms.forge.conftest import (
    SMALL,
    escape_targets,
    planted_secret,
    script_request,
    start,
    wait_for_file,
    waiting_runtime,
)
from tests.realms.forge.probes import DISK_FILL, ESCAPES, FORK_BOMB, MEMORY_HOG

# func_only: the session's image build (minutes, once) is not charged to a test.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60, func_only=True)]

SLEEPER = "import time; time.sleep(300)"


@pytest.fixture(autouse=True)
def docker_settings(forge_settings: Any, podman_url: str, agent_image: str) -> Any:
    forge_settings.BEARPIT_SANDBOX = "docker"
    forge_settings.BEARPIT_DOCKER_URL = podman_url
    forge_settings.BEARPIT_DOCKER_IMAGE = agent_image
    # The probe scripts ignore SIGTERM as a container's pid 1: do not wait 5 s on each.
    forge_settings.BEARPIT_SANDBOX_STOP_GRACE = 1.0
    return forge_settings


@pytest.fixture
def engine(podman_url: str) -> Iterator[Any]:
    client = docker.DockerClient(base_url=podman_url)
    yield client
    client.close()


def _row(realm_id: str, agent_id: str) -> Sandbox:
    return Sandbox.objects.get(realm_id=realm_id, agent_id=agent_id)


def _logs(realm_id: str, agent_id: str) -> str:
    row = _row(realm_id, agent_id)
    return DockerBackend().logs(spec_for(row), handle_for(row))


def _wait_for_log(realm_id: str, agent_id: str, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        logs = _logs(realm_id, agent_id)
        if text in logs:
            return logs
        assert time.monotonic() < deadline, f"{text!r} not in the log:\n{logs}"
        time.sleep(0.1)


def _wait_until_dead(realm_id: str, agent_id: str, timeout: float = 15.0) -> None:
    row = _row(realm_id, agent_id)
    deadline = time.monotonic() + timeout
    while DockerBackend().alive(spec_for(row), handle_for(row)):
        assert time.monotonic() < deadline, f"{agent_id} did not exit"
        time.sleep(0.1)


def test_the_runtime_starts_in_a_container_with_its_birth_config(make_realm):
    """The runtime from the image, its dependencies importing, reading
    /home/agent/.bearpit/birth.json (here: a bad one) and exiting."""
    rid = make_realm().realm_id
    began = time.monotonic()
    start(rid, [AgentSandboxRequest(agent_id="alpha", birth_config=json.dumps({"nonsense": 1}))])
    assert time.monotonic() - began < 10
    text = _wait_for_log(rid, "alpha", "bad birth config")
    assert "nonsense" in text or "agent_id" in text, text
    _wait_until_dead(rid, "alpha")
    # Everything the runtime loads, lazily imported parts included (templates, schema
    # checks, an HTTP exchange over a Unix socket), from the image's own files.
    warm = run_code(
        rid,
        "alpha",
        "import sys, runtime.agent, runtime.warm\n"
        "print(runtime.warm.main(), runtime.agent.__file__, sys.executable)",
        timeout=30,
    )
    assert warm.output.split() == ["0", "/opt/bearpit/runtime/agent.py", "/opt/venv/bin/python"]


def test_a_runtime_started_early_waits_for_its_delivered_birth_config(make_realm):
    rid = make_realm().realm_id
    rows = start(rid, [waiting_runtime("alpha")])
    birth = layout.birth_path(rid, "alpha")
    time.sleep(1.5)
    assert sandbox_alive(rid, "alpha"), "it must wait"
    assert "bad birth config" not in _logs(rid, "alpha")
    with pytest.raises(ForgeError, match="not JSON"):
        deliver_birth(rid, "alpha", "{oops")
    deliver_birth(rid, "alpha", json.dumps({"nonsense": True}))
    info = birth.stat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o600, rows[0].host_uid)
    assert "nonsense" in _wait_for_log(rid, "alpha", "bad birth config")


HOLD_PROBE = (
    ESCAPES
    + r"""
import subprocess, sys
targets = json.loads(sys.argv[1])
result = escapes(targets)
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
result["ids"] = [status["Uid"].split(), status["Gid"].split()]
result["caps"] = {k: status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")}
result["no_new_privs"] = status["NoNewPrivs"].strip()
def attempt(action):
    try:
        action()
        return "done"
    except OSError as exc:
        return exc.errno
result["write_root"] = [
    attempt(lambda: open(path, "w")) for path in ("/opt/bearpit/runtime/planted.py", "/etc/planted")
]
result["write_sockets"] = attempt(lambda: open("/run/bearpit/planted", "w"))
def gateway():
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(5)
        conn.connect("/run/bearpit/gateway.sock")
        conn.sendall(b"GET /v1/models HTTP/1.0\r\nHost: gateway\r\n\r\n")
        return conn.recv(64).decode().split("\r\n")[0]
try:
    result["gateway"] = gateway()
except OSError as exc:
    result["gateway"] = "error " + str(exc.errno)
def child(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return {"code": done.returncode, "out": done.stdout.strip().splitlines()[-1:]}
result["disk_home"] = child(DISK_FILL)
with open("/home/agent/result.json.tmp", "w") as handle:
    json.dump(result, handle)
os.rename("/home/agent/result.json.tmp", "/home/agent/result.json")
time.sleep(300)
"""
).replace("child(DISK_FILL)", f"child({DISK_FILL!r})")


def test_the_container_holds_the_agent_down(make_realm, listener, gateway, engine):
    """As the agent's uid, no capabilities, read-only root, no network, only its own
    home; the platform sockets reachable but read-only."""
    rid = make_realm().realm_id
    needle, secret_file = planted_secret()
    targets = escape_targets(rid, listener, needle, secret_file, [])
    probe = script_request("alpha", HOLD_PROBE, json.dumps(targets))
    bravo = replace(script_request("bravo", SLEEPER), env={"BEARPIT_PLANTED_SECRET": needle})
    rows = start(rid, [probe, bravo])
    uid, gid = rows[0].host_uid, rows[0].host_gid
    result = json.loads(wait_for_file(layout.home_dir(rid, "alpha") / "result.json"))

    assert result["ids"] == [[str(uid)] * 4, [str(gid)] * 4]  # real, effective, saved, fs
    assert set(result["groups"]) <= {gid}  # the engine may list the realm's group again
    assert set(result["caps"].values()) == {"0000000000000000"}, result["caps"]
    assert result["no_new_privs"] == "1"
    assert result["write_root"] == [30, 30]  # EROFS: the runtime's code stays as built
    assert result["write_sockets"] == 30
    assert result["gateway"].startswith("HTTP/1.1 "), result["gateway"]
    assert result["tcp_listener"].startswith("refused")
    assert result["tcp_outside"].startswith("refused")
    assert result["other_home"] == [False, False, False]
    assert result["keystore"] is False and result["database"] is False
    assert result["bearpit_home_exists"] is False
    assert result["root_entries"] == []
    assert result["birth_readable"] is True  # the runtime's own, and only there
    assert result["environ_leaks"] == []
    written, error = result["disk_home"]["out"][0].split()[1:3]
    assert int(written) <= SMALL.disk_bytes and error.endswith(":28"), result["disk_home"]

    # The engine says the same from outside.
    attrs = engine.containers.get(rows[0].ref).attrs
    assert attrs["Config"]["User"] == f"{uid}:{gid}"
    assert attrs["HostConfig"]["ReadonlyRootfs"] is True
    assert attrs["HostConfig"]["NetworkMode"] == "none"
    assert attrs["HostConfig"]["Memory"] == SMALL.memory_bytes
    assert attrs["HostConfig"]["PidsLimit"] == SMALL.max_processes
    assert attrs["HostConfig"]["NanoCpus"] == int(SMALL.cpus * 1e9)


def test_run_code_works_and_its_caps_hold(make_realm):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", SLEEPER)])
    answer = run_code(rid, "alpha", "import os; print(6 * 7, os.getuid())")
    assert answer.exit_code == 0 and answer.output.split() == ["42", str(rows[0].host_uid)]
    # The birth config is the runtime's, not run_code's: an empty tmpfs lies over it.
    assert layout.birth_path(rid, "alpha").exists()
    hidden = run_code(rid, "alpha", "print(open('/home/agent/.bearpit/birth.json').read())")
    assert hidden.exit_code == 1
    error = hidden.output.strip().splitlines()[-1]
    assert error.startswith(("PermissionError", "FileNotFoundError")), hidden.output
    alone = run_code(
        rid, "alpha", "import os; print(max(int(p) for p in os.listdir('/proc') if p.isdigit()))"
    )
    assert int(alone.output) < 10  # a pid namespace of its own: the runtime is not there

    memory = run_code(rid, "alpha", MEMORY_HOG, timeout=30)
    assert "survived" not in memory.output
    assert memory.exit_code == 137, memory  # SIGKILL by the OOM killer
    last = memory.output.strip().splitlines()[-1]
    assert int(last.split()[1]) * 1024 * 1024 < SMALL.memory_bytes

    began = time.monotonic()
    bomb = run_code(rid, "alpha", FORK_BOMB, timeout=20)
    assert bomb.exit_code == 0, bomb.output
    kids = bomb.output.split()
    assert kids[0] == "FORK" and int(kids[1]) < SMALL.max_processes, bomb.output
    assert kids[2] == "BlockingIOError"
    # Its sleeping children died with the container, not 30 s later; the host is fine.
    assert time.monotonic() - began < 15
    subprocess.run(["true"], check=True, timeout=2)
    assert sandbox_alive(rid, "alpha")
    assert run_code(rid, "alpha", "print('still here')").output == "still here\n"

    timed = run_code(
        rid, "alpha", "import time; print('started', flush=True); time.sleep(60)", timeout=2
    )
    assert timed.timed_out and timed.exit_code is None and "started" in timed.output


GRACEFUL = r"""
import signal, sys, time
def bye(*_):
    open("/home/agent/terminated", "w").write("bye")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
open("/home/agent/ready", "w").write("ready")
print("ready", flush=True)
time.sleep(300)
"""


def test_stop_alive_and_reattach(make_realm, engine):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", GRACEFUL)])
    wait_for_file(layout.home_dir(rid, "alpha") / "ready")
    spec, handle = spec_for(rows[0]), handle_for(rows[0])
    assert engine.containers.get(container_name(spec)).id == handle.ref
    # A restarted worker: a new backend, a new engine connection, the same container.
    assert DockerBackend().alive(spec, handle)
    assert [row.agent_id for row in reattach(rid)] == ["alpha"]

    began = time.monotonic()
    assert stop_agent_sandbox(rid, "alpha", "eliminated") is True
    assert time.monotonic() - began < 5
    assert (layout.home_dir(rid, "alpha") / "terminated").read_text() == "bye"
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(handle.ref)
    assert not DockerBackend().alive(spec, handle)
    assert "ready" in layout.log_path(rid, "alpha").read_text()  # the output, archived
    assert stop_agent_sandbox(rid, "alpha", "eliminated") is False
    assert reattach(rid) == []


def test_a_runtime_that_exits_is_not_alive_and_release_keeps_its_log(make_realm, engine):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", "print('last words', flush=True)")])
    _wait_until_dead(rid, "alpha")
    assert not sandbox_alive(rid, "alpha")
    assert reattach(rid) == []
    assert engine.containers.get(rows[0].ref).status == "exited"
    release_realm(rid)
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(rows[0].ref)
    assert "last words" in layout.log_path(rid, "alpha").read_text()


def test_reap_removes_orphan_containers(make_realm, engine):
    running = make_realm()
    running_rows = start(running.realm_id, [script_request("alpha", SLEEPER)])
    lost = make_realm()
    lost_rows = start(lost.realm_id, [script_request("alpha", SLEEPER)])
    Sandbox.objects.filter(pk=lost_rows[0].pk).delete()  # the database forgot it
    finished = make_realm()
    finished_rows = start(finished.realm_id, [script_request("alpha", SLEEPER)])
    Realm.objects.filter(pk=finished.pk).update(state=Realm.State.ARCHIVED)

    live = {(r.realm_id, r.agent_id) for r in Sandbox.objects.filter(state__in=Sandbox.LIVE_STATES)}
    lost_name = container_name(spec_for(lost_rows[0]))
    assert DockerBackend().orphans(live) == [lost_name]
    dry = reap(dry_run=True)
    assert {"kind": "container", "name": lost_name} in dry
    assert engine.containers.get(lost_rows[0].ref).status == "running"  # dry run

    reap()
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(lost_rows[0].ref)
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(finished_rows[0].ref)  # its realm is over: stopped, removed
    assert engine.containers.get(running_rows[0].ref).status == "running"
    assert run_code(running.realm_id, "alpha", "print('untouched')").output == "untouched\n"


def test_reap_removes_a_forgotten_realms_network(make_realm, engine):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", SLEEPER)], egress="open")
    name = network_name(spec_for(rows[0]))
    assert [n.name for n in engine.networks.list(names=[name])] == [name]
    assert {"kind": "network", "name": name} not in reap(dry_run=True), "its realm is live"
    Sandbox.objects.filter(pk=rows[0].pk).delete()  # the database forgot it
    assert {"kind": "network", "name": name} in reap(dry_run=True)
    reap()
    assert [n.name for n in engine.networks.list(names=[name]) if n.name == name] == []
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(rows[0].ref)


def test_open_egress_gets_the_realms_network_and_run_code_none(make_realm, engine):
    rid = make_realm().realm_id
    probe = (
        "import socket, time\n"
        "names = sorted(name for _, name in socket.if_nameindex())\n"
        "open('/home/agent/ifaces.txt', 'w').write(' '.join(names))\n"
        "time.sleep(300)\n"
    )
    rows = start(
        rid, [script_request("alpha", probe), script_request("bravo", SLEEPER)], egress="open"
    )
    ifaces = wait_for_file(layout.home_dir(rid, "alpha") / "ifaces.txt").split()
    assert "lo" in ifaces and len(ifaces) >= 2, ifaces
    name = network_name(spec_for(rows[0]))
    attached = engine.containers.get(rows[0].ref).attrs["NetworkSettings"]["Networks"]
    assert list(attached) == [name]
    code = "import socket; print(sorted(n for _, n in socket.if_nameindex()))"
    assert run_code(rid, "alpha", code).output.strip() == "['lo']"
    release_realm(rid)
    assert engine.networks.list(names=[name]) == []
