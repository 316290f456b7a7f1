"""Sockets, the shared folder, run_code limits, survival, stop, failure and reaping."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from django.db import connection

from realms.forge import cgroups, layout, netns, procs
from realms.forge.models import Sandbox
from realms.forge.outputs import capture_outputs
from realms.forge.reap import reap
from realms.forge.runcode import OUTPUT_LIMIT, run_code
from realms.forge.services import (
    WAITING_NICENESS,
    AgentSandboxRequest,
    ForgeError,
    deliver_birth,
    reattach,
    sandbox_alive,
    stop_agent_sandbox,
    stop_realm_sandboxes,
)
from realms.models import Realm
from tests.realms.forge.conftest import (
    BUS_TOKEN,
    VIRTUAL_KEY,
    processes_of,
    script_request,
    start,
    wait_for_file,
    waiting_runtime,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

SLEEPER = "import time; time.sleep(300)"

SOCKET_CLIENT = r"""
import json, os, socket, time
try:
    open("/run/bearpit/planted", "w")
    planted = "wrote"
except OSError as exc:
    planted = type(exc).__name__ + ":" + str(exc.errno)
try:
    os.unlink("/run/bearpit/probe.sock")
    planted += " unlinked"
except OSError as exc:
    planted += " " + type(exc).__name__ + ":" + str(exc.errno)
open("/home/agent/planted.txt", "w").write(planted)
seen = []
for _ in range(400):
    try:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(2)
            conn.connect("/run/bearpit/probe.sock")
            conn.sendall(b"GET / HTTP/1.0\r\nHost: probe\r\n\r\n")
            data = b""
            while chunk := conn.recv(4096):
                data += chunk
        body = data.split(b"\r\n\r\n", 1)[1].decode()
    except OSError as exc:
        body = "error:" + type(exc).__name__
    if not seen or seen[-1] != body:
        seen.append(body)
        with open("/home/agent/seen.tmp", "w") as handle:
            json.dump(seen, handle)
        os.rename("/home/agent/seen.tmp", "/home/agent/seen.json")
    time.sleep(0.05)
"""


class _UnixHTTPServer(HTTPServer):
    address_family = __import__("socket").AF_UNIX

    def server_bind(self) -> None:
        self.socket.bind(self.server_address)

    def get_request(self):
        request, _ = self.socket.accept()
        return request, ("probe", 0)


def _serve(path: Path, body: str) -> _UnixHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    if path.exists():
        path.unlink()
    server = _UnixHTTPServer(str(path), Handler)  # type: ignore[arg-type]
    path.chmod(0o666)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_sockets_reachable_and_survive_a_server_restart(make_realm):
    sock = layout.sockets_dir() / "probe.sock"
    server = _serve(sock, "first")
    try:
        rid = make_realm().realm_id
        start(rid, [script_request("alpha", SOCKET_CLIENT)])
        seen_path = layout.home_dir(rid, "alpha") / "seen.json"
        wait_for_file(seen_path, done="first")
        # Read-only: the sandbox can neither plant files nor remove the socket (EROFS).
        planted = (layout.home_dir(rid, "alpha") / "planted.txt").read_text()
        assert planted == "OSError:30 OSError:30", planted
        server.shutdown()
        server.server_close()
        server = _serve(sock, "second")
        seen = json.loads(wait_for_file(seen_path, done="second"))
        assert seen[0] == "first" and seen[-1] == "second"
    finally:
        server.shutdown()
        server.server_close()
        sock.unlink(missing_ok=True)
    assert not (layout.sockets_dir() / "planted").exists()


def test_shared_folder_is_shared_and_captured(make_realm):
    rid = make_realm().realm_id
    start(
        rid,
        [script_request("alpha", SLEEPER), script_request("bravo", SLEEPER)],
        shared_folder=True,
    )
    wrote = run_code(rid, "alpha", "open('/realm/shared/plan.txt','w').write('from alpha\\n')")
    assert wrote.exit_code == 0, wrote.output
    both = run_code(
        rid,
        "bravo",
        "p='/realm/shared/plan.txt'; open(p,'a').write('and bravo\\n'); print(open(p).read())",
    )
    assert both.exit_code == 0, both.output
    assert both.output == "from alpha\nand bravo\n\n"
    captured = capture_outputs(rid, ["plan.txt", "missing/*.md"])
    assert captured[0]["path"] == "plan.txt" and captured[0]["bytes"] == 21
    assert len(captured[0]["sha256"]) == 64
    assert captured[1] == {"path": "missing/*.md", "missing": True}
    assert (layout.outputs_dir(rid) / "plan.txt").read_text() == "from alpha\nand bravo\n"


def test_shared_folder_absent_when_disabled(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", SLEEPER)])
    result = run_code(rid, "alpha", "import os; print(os.path.exists('/realm/shared'))")
    assert result.output.strip() == "False"


def test_capture_never_follows_symlinks(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", SLEEPER)], shared_folder=True)
    run_code(rid, "alpha", "import os; os.symlink('/etc/shadow', '/realm/shared/out.txt')")
    assert capture_outputs(rid, ["out.txt"]) == [{"path": "out.txt", "missing": True}]


def test_run_code_times_out_and_kills_everything(make_realm):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", SLEEPER)])
    began = time.monotonic()
    code = (
        "import subprocess, time\n"
        "subprocess.Popen(['sleep', '60'])\n"
        "print('started')\n"
        "time.sleep(60)"
    )
    result = run_code(rid, "alpha", code, timeout=2)
    elapsed = time.monotonic() - began
    assert result.timed_out is True and result.exit_code is None
    assert 2 <= elapsed < 8
    assert "started" in result.output
    left = processes_of(rows[0].host_uid, expect=1)
    assert len(left) == 1  # the runtime; the sleeper child died with the exec sandbox


def test_run_code_clips_and_masks(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", SLEEPER)])
    key = f"{VIRTUAL_KEY}-alpha"
    code = (
        f"print({key!r}); print({BUS_TOKEN + '-alpha'!r}); print('mcp-token-xyz987');"
        "print('caller-secret-42'); print('x' * 20000)"
    )
    result = run_code(rid, "alpha", code, secrets=["caller-secret-42"])
    assert result.exit_code == 0
    assert len(result.output) == OUTPUT_LIMIT
    for secret in (key, BUS_TOKEN, "mcp-token-xyz987", "caller-secret-42"):
        assert secret not in result.output
    assert result.output.count("[redacted]") == 4
    assert result.output.endswith("[output clipped]")


def test_sandbox_outlives_its_starter_and_is_reattached(make_realm):
    rid = make_realm().realm_id
    starter = f"""
import json, sys
from django.conf import settings
settings.DATABASES["default"]["NAME"] = {str(connection.settings_dict["NAME"])!r}
import django
django.setup()
from tests.realms.forge.conftest import SMALL, UID_BASE, script_request
settings.BEARPIT_SANDBOX_UID_BASE = UID_BASE
settings.BEARPIT_SANDBOX_UID_COUNT = 500
from realms.forge.services import start_agent_sandboxes
rows = start_agent_sandboxes({rid!r}, [script_request("alpha", {SLEEPER!r})], limits=SMALL)
print(json.dumps([rows[0].pid, rows[0].pid_start_time]))
"""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", starter], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    pid, started = json.loads(done.stdout.strip().splitlines()[-1])
    # The starter is gone; the sandbox is not.
    assert procs.is_same_process(pid, started)
    live = reattach(rid)
    assert [row.agent_id for row in live] == ["alpha"]
    assert sandbox_alive(rid, "alpha")
    assert run_code(rid, "alpha", "print(6 * 7)").output.strip() == "42"

    assert stop_agent_sandbox(rid, "alpha", "eliminated") is True
    assert stop_agent_sandbox(rid, "alpha", "eliminated") is False
    assert not procs.is_same_process(pid, started)
    row = Sandbox.objects.get(realm_id=rid, agent_id="alpha")
    assert row.state == Sandbox.State.STOPPED and row.stop_reason == "eliminated"
    # A sandbox that died while nobody watched is marked stopped on re-attach.
    assert reattach(rid) == []


def test_partial_failure_tears_down_and_names_the_agent(make_realm):
    rid = make_realm().realm_id
    bad_image = layout.home_image(rid, "bravo")
    bad_image.parent.mkdir(parents=True)
    bad_image.write_bytes(b"not a filesystem" * 1000)
    with pytest.raises(ForgeError) as failure:
        start(rid, [script_request("alpha", SLEEPER), script_request("bravo", SLEEPER)])
    assert failure.value.agent_id == "bravo"
    assert "agent bravo" in str(failure.value)
    alpha = Sandbox.objects.get(realm_id=rid, agent_id="alpha")
    assert alpha.state == Sandbox.State.STOPPED
    assert not procs.is_same_process(alpha.pid, alpha.pid_start_time)
    assert Sandbox.objects.get(realm_id=rid, agent_id="bravo").state == Sandbox.State.FAILED
    assert not os.path.ismount(layout.home_dir(rid, "alpha"))


def test_a_failure_among_concurrent_starts_leaves_nothing_running(make_realm):
    # Starts overlap, so agents after the failing one may have started already: they
    # must be stopped and released as surely as the ones before it.
    rid = make_realm().realm_id
    names = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    bad_image = layout.home_image(rid, "charlie")
    bad_image.parent.mkdir(parents=True)
    bad_image.write_bytes(b"not a filesystem" * 1000)
    with pytest.raises(ForgeError) as failure:
        start(rid, [script_request(name, SLEEPER) for name in names])
    assert failure.value.agent_id == "charlie"
    rows = {row.agent_id: row for row in Sandbox.objects.filter(realm_id=rid)}
    assert rows["charlie"].state == Sandbox.State.FAILED
    for name in names:
        row = rows[name]
        assert row.state in (Sandbox.State.STOPPED, Sandbox.State.FAILED), name
        assert processes_of(row.host_uid, 0) == [], name
        assert not os.path.ismount(layout.home_dir(rid, name)), name


def test_each_sandbox_is_handed_over_as_soon_as_it_runs(make_realm):
    # Provisioning delivers a birth config from this callback, so it must come once per
    # agent, in order, with the sandbox already running and its birth deliverable.
    rid = make_realm().realm_id
    seen: list[tuple[str, str]] = []

    def started(row: Sandbox) -> None:
        seen.append((row.agent_id, Sandbox.objects.get(pk=row.pk).state))
        deliver_birth(rid, row.agent_id, json.dumps({"agent": row.agent_id}))

    names = ["alpha", "bravo", "charlie"]
    start(
        rid,
        [replace(script_request(n, SLEEPER), birth_config=None) for n in names],
        on_started=started,
    )
    assert seen == [(n, Sandbox.State.RUNNING) for n in names]
    for name in names:
        assert json.loads(layout.birth_path(rid, name).read_text()) == {"agent": name}


def test_reap_removes_orphans(make_realm):
    finished = make_realm()
    rows = start(finished.realm_id, [script_request("alpha", SLEEPER)])
    Realm.objects.filter(pk=finished.pk).update(state=Realm.State.ARCHIVED)
    lost = make_realm()
    lost_rows = start(lost.realm_id, [script_request("alpha", SLEEPER)])
    Sandbox.objects.filter(pk=lost_rows[0].pk).delete()  # the database forgot it

    running = make_realm()
    running_rows = start(running.realm_id, [script_request("alpha", SLEEPER)])

    dry = reap(dry_run=True)
    assert not [i for i in dry if i.get("realm") == running.realm_id]
    kinds = {(item["kind"], item.get("realm")) for item in dry}
    assert ("sandbox", finished.realm_id) in kinds
    assert ("process", lost.realm_id) in kinds
    assert procs.is_same_process(rows[0].pid, rows[0].pid_start_time)  # dry run: untouched

    reap()
    assert not procs.is_same_process(rows[0].pid, rows[0].pid_start_time)
    assert not procs.is_same_process(lost_rows[0].pid, lost_rows[0].pid_start_time)
    assert Sandbox.objects.get(pk=rows[0].pk).state == Sandbox.State.STOPPED
    # The live realm's sandbox is untouched, its pid-namespace init included.
    assert procs.is_same_process(running_rows[0].pid, running_rows[0].pid_start_time)
    assert run_code(running.realm_id, "alpha", "print('still here')").output == "still here\n"
    assert len(procs.descendants(running_rows[0].pid)) >= 2
    assert not os.path.ismount(layout.home_dir(lost.realm_id, "alpha"))
    assert not (cgroups.CGROUP_ROOT / "pids" / layout.install_tag() / lost.realm_id).exists()
    assert not [
        i for i in reap(dry_run=True) if i.get("realm") in (finished.realm_id, lost.realm_id)
    ]
    stop_realm_sandboxes(lost.realm_id)


def test_reap_removes_an_orphaned_network_namespace(make_realm):
    lost = make_realm()
    rows = start(lost.realm_id, [script_request("alpha", SLEEPER)], egress="open")
    namespace = netns.path_for(layout.install_tag(), lost.realm_id, "alpha")
    pasta = int(namespace.with_name(namespace.name + ".pasta.pid").read_text())
    assert procs.is_same_process(pasta, None)
    Sandbox.objects.filter(pk=rows[0].pk).delete()  # the database forgot it
    reaped = reap()
    assert [i for i in reaped if i["kind"] == "netns"] == [
        {"kind": "netns", "path": str(namespace), "realm": lost.realm_id}
    ]
    assert len([i for i in reaped if i["kind"] == "process"]) == 1  # one sandbox, one entry
    assert not namespace.exists()
    assert not procs.is_same_process(pasta, None)  # pasta went with it


def test_the_runtime_starts_inside_with_its_birth_config(make_realm):
    """The real runtime command and birth path: the package and its SDKs import in the
    sandbox view, and it reads /home/agent/.bearpit/birth.json (here: a bad one)."""
    rid = make_realm().realm_id
    request = AgentSandboxRequest(agent_id="alpha", birth_config=json.dumps({"nonsense": True}))
    rows = start(rid, [request])
    log_path = layout.log_path(rid, "alpha")
    text = wait_for_file(log_path, done="bad birth config")
    assert "nonsense" in text or "agent_id" in text, text
    deadline = time.monotonic() + 10
    while procs.is_same_process(rows[0].pid, rows[0].pid_start_time):
        assert time.monotonic() < deadline, "the runtime did not exit on a bad config"
        time.sleep(0.05)
    imports = run_code(
        rid,
        "alpha",
        "import ssl, runtime.agent, runtime.matrix_bus, runtime.mcp_client, runtime.model\n"
        "ssl.create_default_context(); print('imported')",
        timeout=60,
    )
    assert imports.output.strip() == "imported", imports.output


def test_a_runtime_started_early_waits_for_its_delivered_birth_config(make_realm):
    """Provisioning starts runtimes before the bus exists; each loads its code and waits
    until ``deliver_birth`` renames its config into place (0600, the agent's own)."""
    rid = make_realm().realm_id
    rows = start(rid, [waiting_runtime("alpha")])
    birth = layout.birth_path(rid, "alpha")
    time.sleep(1.5)
    assert procs.is_same_process(rows[0].pid, rows[0].pid_start_time), "it must wait"
    assert not birth.exists()
    assert "bad birth config" not in layout.log_path(rid, "alpha").read_text()
    with pytest.raises(ForgeError, match="no running sandbox"):
        deliver_birth(rid, "nobody", "{}")
    with pytest.raises(ForgeError, match="not JSON"):
        deliver_birth(rid, "alpha", "{oops")
    assert not birth.exists()
    deliver_birth(rid, "alpha", json.dumps({"nonsense": True}))
    info = birth.stat()
    assert (info.st_mode & 0o777, info.st_uid) == (0o600, rows[0].host_uid)
    assert not list(birth.parent.glob("*.part"))
    text = wait_for_file(layout.log_path(rid, "alpha"), done="bad birth config")
    assert "nonsense" in text, text


NICENESS_PROBE = r"""
import os, threading, time
birth = "/home/agent/.bearpit/birth.json"
open("/home/agent/waiting.txt", "w").write(str(os.nice(0)))
def report(name):
    # os.nice(0) reads the calling thread's own niceness.
    while not os.path.exists(birth):
        time.sleep(0.02)
    time.sleep(0.1)
    open(f"/home/agent/{name}.txt", "w").write(str(os.nice(0)))
worker = threading.Thread(target=report, args=("thread",))
worker.start()
report("main")
worker.join()
time.sleep(300)
"""


def test_a_waiting_runtime_starts_at_low_priority_and_its_birth_restores_it(make_realm):
    # While the bus is built the waiting runtimes must yield the CPU to the platform;
    # once born they are agents like any other, every thread of them.
    rid = make_realm().realm_id
    request = replace(script_request("alpha", NICENESS_PROBE), birth_config=None)
    start(rid, [request])
    home = layout.home_dir(rid, "alpha")
    assert wait_for_file(home / "waiting.txt") == str(WAITING_NICENESS)
    deliver_birth(rid, "alpha", json.dumps({"born": True}))
    assert wait_for_file(home / "main.txt") == "0"
    assert wait_for_file(home / "thread.txt") == "0"


GRACEFUL = r"""
import signal, sys, time
def bye(*_):
    open("/home/agent/terminated", "w").write("bye")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
time.sleep(300)
"""

STUBBORN = r"""
import signal, subprocess, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
subprocess.Popen(["sleep", "300"], start_new_session=True)
open("/home/agent/ready", "w").write("ready")
while True:
    time.sleep(1)
"""


def test_stop_is_graceful_then_forced(make_realm, settings):
    settings.BEARPIT_SANDBOX_STOP_GRACE = 1.0
    rid = make_realm().realm_id
    rows = start(rid, [script_request("calm", GRACEFUL), script_request("mule", STUBBORN)])
    wait_for_file(layout.home_dir(rid, "mule") / "ready")

    began = time.monotonic()
    assert stop_agent_sandbox(rid, "calm", "eliminated")
    assert time.monotonic() - began < 1.0
    assert (layout.home_dir(rid, "calm") / "terminated").read_text() == "bye"

    began = time.monotonic()
    assert stop_agent_sandbox(rid, "mule", "budget exhausted")
    assert time.monotonic() - began >= 1.0
    for row in rows:
        assert not procs.is_same_process(row.pid, row.pid_start_time)
        assert processes_of(row.host_uid, expect=0) == []
