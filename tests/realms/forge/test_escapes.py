"""The sandbox boundary, attacked as the runtime's uid and through run_code."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings

from realms.forge import cgroups, layout, netns, procs
from realms.forge.runcode import run_code
from realms.forge.services import release_realm
from tests.realms.forge.conftest import (
    SMALL,
    escape_targets,
    planted_secret,
    processes_of,
    same_uid_holder,
    script_request,
    start,
    wait_for_file,
)
from tests.realms.forge.probes import DISK_FILL, ESCAPES, FORK_BOMB, MEMORY_HOG, WRITABLE

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

SLEEPER = "import time; time.sleep(300)"


def wait_for_environ(pid: int, needle: str, timeout: float = 5.0) -> bool:
    """Whether ``pid``'s environment (read from the host) holds ``needle``: the plant
    took, so finding nothing inside means something."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if needle.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


RUNTIME_PROBE = (
    ESCAPES
    + r"""
import subprocess, sys, time
targets = json.loads(sys.argv[1])
result = escapes(targets)
def child(code):
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return {"code": done.returncode, "out": done.stdout.strip().splitlines()[-1:]}
result["disk_home"] = child(DISK_FILL)
import shutil; shutil.rmtree("/home/agent/fill")  # room for what is written below
result["memory"] = child(MEMORY_HOG)
with open("/home/agent/result.json.tmp", "w") as handle:
    json.dump(result, handle)
os.rename("/home/agent/result.json.tmp", "/home/agent/result.json")
# Then the environments of the host processes the test names once it has planted them.
for _ in range(600):
    if os.path.exists("/home/agent/go.json"):
        break
    time.sleep(0.05)
targets["pids"] = json.load(open("/home/agent/go.json"))
with open("/home/agent/environ.json.tmp", "w") as handle:
    json.dump(escapes(targets)["environ_leaks"], handle)
os.rename("/home/agent/environ.json.tmp", "/home/agent/environ.json")
bomb = child(FORK_BOMB)
with open("/home/agent/fork.json.tmp", "w") as handle:
    json.dump(bomb, handle)
os.rename("/home/agent/fork.json.tmp", "/home/agent/fork.json")
time.sleep(300)
"""
)


def test_runtime_uid_cannot_escape_and_caps_hold(make_realm, listener):
    realm = make_realm()
    rid = realm.realm_id
    needle, secret_file = planted_secret()
    targets = escape_targets(rid, listener, needle, secret_file, [])
    targets_arg = json.dumps(targets)
    script = (
        RUNTIME_PROBE.replace("child(DISK_FILL)", f"child({DISK_FILL!r})")
        .replace("child(MEMORY_HOG)", f"child({MEMORY_HOG!r})")
        .replace("child(FORK_BOMB)", f"child({FORK_BOMB!r})")
    )
    probe = script_request("alpha", script, targets_arg)
    bravo = replace(
        script_request("bravo", "import time; time.sleep(300)"),
        env={"BEARPIT_PLANTED_SECRET": needle},
    )
    rows = start(rid, [probe, bravo])
    alpha_row = rows[0]
    assert alpha_row.host_uid != rows[1].host_uid
    assert alpha_row.host_uid >= settings.BEARPIT_SANDBOX_UID_BASE

    home = layout.home_dir(rid, "alpha")
    result = json.loads(wait_for_file(home / "result.json", timeout=60))
    assert result["uid"] == alpha_row.host_uid
    assert result["gid"] == alpha_row.host_gid
    assert result["groups"] == []
    assert result["tcp_listener"].startswith("refused")
    assert result["tcp_outside"].startswith("refused")
    assert result["other_home"] == [False, False, False]
    assert result["keystore"] is False
    assert result["database"] is False
    assert result["bearpit_home_exists"] is False
    # Only what leads to the code's own read-only binds, nothing of the real /root.
    host_root = set(os.listdir("/root"))
    # The read-only binds (interpreter, venv, runtime) that live under /root (uv's or pyenv's
    # Python, a checkout there) show their first folder; those under /usr show none.
    binds = [Path(sys.base_prefix).resolve(), Path(sys.prefix), Path(settings.BASE_DIR)]
    allowed = {p.relative_to("/root").parts[0] for p in binds if p.is_relative_to("/root")}
    assert set(result["root_entries"]) <= allowed
    assert host_root - allowed, "the host's /root should hold more than the interpreter"
    # The runtime itself must read its own birth config.
    assert result["birth_readable"] is True

    # A process of the agent's own uid outside the sandbox, and bravo's runtime, hold
    # the secret in their environments: neither is visible from inside.
    holder = same_uid_holder(alpha_row.host_uid, alpha_row.host_gid, needle)
    try:
        assert wait_for_environ(holder.pid, needle)
        pids = [holder.pid, *procs.descendants(rows[1].pid)]
        go = home / "go.json.tmp"
        go.write_text(json.dumps([str(p) for p in pids]))
        go.chmod(0o644)  # the platform writes 0600; the probe runs as the agent
        go.rename(home / "go.json")
        try:
            leaks = json.loads(wait_for_file(home / "environ.json", timeout=30))
        except AssertionError:
            log = layout.log_path(rid, "alpha").read_text()[-2000:]
            raise AssertionError(f"no environ.json: {log}") from None
    finally:
        holder.kill()
        holder.wait()
    assert leaks == [], leaks

    # Disk: stopped at the home's cap with "no space", far below what it tried.
    written, error = result["disk_home"]["out"][0].split()[1:3]
    assert int(written) <= SMALL.disk_bytes
    assert error.endswith(":28"), error  # ENOSPC
    # Memory: the hog is killed before it passes the cap.
    assert result["memory"]["code"] == -9, result["memory"]
    last = result["memory"]["out"][0]
    assert last.startswith("MEM ") and "survived" not in last
    assert int(last.split()[1]) * 1024 * 1024 < SMALL.memory_bytes

    # Fork bomb: bounded by the process cap, and the host stays responsive meanwhile.
    bomb = json.loads(wait_for_file(home / "fork.json", timeout=60))
    kids_text = bomb["out"][0].split()
    assert kids_text[0] == "FORK" and int(kids_text[1]) < SMALL.max_processes
    assert kids_text[2] == "BlockingIOError"
    began = time.monotonic()
    subprocess.run(["true"], check=True)
    assert time.monotonic() - began < 2.0
    pids_of_uid = [p for p in procs.all_pids() if procs.uid_of(p) == alpha_row.host_uid]
    assert len(pids_of_uid) <= SMALL.max_processes


def test_run_code_cannot_escape(make_realm, listener):
    realm = make_realm()
    rid = realm.realm_id
    needle, secret_file = planted_secret()
    rows = start(
        rid,
        [
            replace(
                script_request("alpha", "import time; time.sleep(300)"),
                env={"BEARPIT_PLANTED_SECRET": needle},
            ),
            script_request("bravo", "import time; time.sleep(300)"),
        ],
    )
    runtime_pids = procs.descendants(rows[0].pid)
    # The runtime's environment holds the secret; run_code runs as the same uid.
    assert any(wait_for_environ(pid, needle) for pid in runtime_pids)
    targets = escape_targets(rid, listener, needle, secret_file, runtime_pids)
    code = ESCAPES + f"\nprint(json.dumps(escapes({json.dumps(targets)})))\n"
    result = run_code(rid, "alpha", code, timeout=30)
    assert result.exit_code == 0, result.output
    outcome = json.loads(result.output)
    assert outcome["uid"] == rows[0].host_uid
    assert outcome["tcp_listener"].startswith("refused")
    assert outcome["tcp_outside"].startswith("refused")
    assert outcome["other_home"] == [False, False, False]
    assert outcome["keystore"] is False
    assert outcome["database"] is False
    assert outcome["bearpit_home_exists"] is False
    assert outcome["birth_readable"] is False
    assert outcome["environ_leaks"] == []
    # A fresh pid namespace: the runtime's processes are not even visible.
    assert max(outcome["visible_pids"]) < 10


def test_nothing_outside_home_shared_and_tmp_is_writable(make_realm):
    rid = make_realm().realm_id
    to_file = "open('/home/agent/writable.json', 'w').write(json.dumps("
    runtime_probe = WRITABLE.replace("print(json.dumps(", to_file) + f"\n{SLEEPER}\n"
    start(rid, [script_request("alpha", runtime_probe)], shared_folder=True)
    # The probe walks the whole tree; on a busy machine that takes a while.
    written = wait_for_file(layout.home_dir(rid, "alpha") / "writable.json", timeout=90)
    as_runtime = json.loads(written)
    assert as_runtime["writable"] == [], as_runtime["writable"]
    through_run_code = run_code(rid, "alpha", WRITABLE, timeout=60)
    assert json.loads(through_run_code.output)["writable"] == [], through_run_code.output


def test_run_code_caps_hold(make_realm):
    realm = make_realm()
    rid = realm.realm_id
    rows = start(rid, [script_request("alpha", "import time; time.sleep(300)")], shared_folder=True)

    disk = run_code(rid, "alpha", DISK_FILL.replace("/home/agent/fill", "/realm/shared/fill"))
    written, error = disk.output.split()[1:3]
    assert int(written) <= SMALL.shared_disk_bytes and error.endswith(":28"), disk.output

    memory = run_code(rid, "alpha", MEMORY_HOG, timeout=30)
    assert "survived" not in memory.output
    assert memory.exit_code != 0

    began = time.monotonic()
    bomb = run_code(rid, "alpha", FORK_BOMB, timeout=20)
    assert bomb.exit_code == 0, bomb.output
    kids = bomb.output.split()
    assert kids[0] == "FORK" and int(kids[1]) < SMALL.max_processes, bomb.output
    # The bomb's sleeping children died with the exec sandbox, not 30 s later.
    assert time.monotonic() - began < 15
    left = processes_of(rows[0].host_uid, expect=1)
    assert len(left) == 1, [procs.cmdline(p) for p in left]  # only the runtime


EGRESS_PROBE = r"""
import json, os, socket, sys, time
targets = json.loads(sys.argv[1])
out = {"tcp": {}}
for host, port in targets["tcp"]:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as conn:
            conn.settimeout(3)
            conn.connect(socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)[0][4])
        out["tcp"][host] = "connected"
    except OSError as exc:
        out["tcp"][host] = "refused: " + type(exc).__name__
try:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(3)
        conn.connect(targets["abstract"])
    out["abstract"] = "connected"
except OSError as exc:
    out["abstract"] = "refused: " + type(exc).__name__
try:
    with socket.socket(socket.AF_UNIX) as conn:
        conn.settimeout(10)
        conn.connect("/run/bearpit/gateway.sock")
        conn.sendall(b"GET /v1/models HTTP/1.0\r\nHost: gateway\r\n\r\n")
        out["gateway"] = conn.recv(64).decode("latin-1").split("\r\n")[0]
except OSError as exc:
    out["gateway"] = "failed: " + type(exc).__name__
routes = open("/proc/net/route").read().splitlines()[1:]
out["default_route"] = [r.split()[0] for r in routes if r.split()[1] == "00000000"]
def is_up(name):
    import fcntl, struct
    with socket.socket() as probe:
        raw = fcntl.ioctl(probe, 0x8913, struct.pack("16sh", name.encode(), 0))  # SIOCGIFFLAGS
    return bool(struct.unpack("16sh", raw[:18])[1] & 1)  # IFF_UP
out["links_up"] = sorted(n for _, n in socket.if_nameindex() if n != "lo" and is_up(n))
with open("/home/agent/net.json.tmp", "w") as handle:
    json.dump(out, handle)
os.rename("/home/agent/net.json.tmp", "/home/agent/net.json")
time.sleep(300)
"""


def _host_listeners(stack: contextlib.ExitStack) -> list[tuple[str, int]]:
    """A listening TCP socket on every address of the host, loopback included."""
    links = json.loads(subprocess.run(["ip", "-j", "addr", "show"], capture_output=True,
                                      text=True, check=True).stdout)  # fmt: skip
    found: list[tuple[str, int]] = []
    for link in links:
        for info in link.get("addr_info", []):
            address = info["local"]
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            server = stack.enter_context(socket.socket(family, socket.SOCK_STREAM))
            scope = socket.if_nametoindex(link["ifname"]) if address.startswith("fe80") else 0
            server.bind((address, 0, 0, scope) if family == socket.AF_INET6 else (address, 0))
            server.listen(8)
            # Inside, the interface pasta makes carries the name of the host's.
            shown = f"{address}%{link['ifname']}" if scope else address
            found.append((shown, server.getsockname()[1]))
    return found


def test_open_egress_has_its_own_namespace_and_reaches_nothing_of_the_host(make_realm, gateway):
    rid = make_realm().realm_id
    with contextlib.ExitStack() as stack:
        tcp = _host_listeners(stack)
        assert any(host == "127.0.0.1" for host, _ in tcp)
        assert any(not host.startswith(("127.", "::1")) for host, _ in tcp), tcp
        abstract = stack.enter_context(socket.socket(socket.AF_UNIX))
        abstract_name = f"\0bearpit-test-{os.getpid()}-{rid}"
        abstract.bind(abstract_name)
        abstract.listen(1)
        targets = {"tcp": tcp, "abstract": abstract_name}
        rows = start(rid, [script_request("alpha", EGRESS_PROBE, json.dumps(targets))],
                     egress="open")  # fmt: skip
        try:
            result = json.loads(wait_for_file(layout.home_dir(rid, "alpha") / "net.json"))
        except AssertionError:
            raise AssertionError(layout.log_path(rid, "alpha").read_text()[-3000:]) from None
    # No address of the host answers, not even through pasta's NAT.
    assert all(v.startswith("refused") for v in result["tcp"].values()), result["tcp"]
    assert set(result["tcp"]) == {host for host, _ in tcp}
    assert result["abstract"].startswith("refused"), result  # not the host's namespace
    assert result["gateway"].startswith("HTTP/1.1 "), result  # the platform's sockets work
    # The NAT side, as far as this offline host can show it: a default route over a
    # tap device that is up.
    assert result["default_route"] and result["links_up"], result
    assert result["default_route"][0] in result["links_up"]
    # run_code still has no network at all.
    code = ESCAPES + f"\nprint(tcp('127.0.0.1', {tcp[0][1]}))"
    assert run_code(rid, "alpha", code).output.startswith("refused")
    assert rows[0].egress == "open"
    namespace = netns.path_for(layout.install_tag(), rid, "alpha")
    assert namespace.exists()
    # What no test may send traffic to is refused by the filter all the same: the
    # metadata service's link-local range, shared address space, the host's subnets.
    rules = subprocess.run(["nsenter", f"--net={namespace}", "nft", "list", "ruleset"],
                           capture_output=True, text=True, check=True).stdout  # fmt: skip
    for refused in ("169.254.0.0/16", "100.64.0.0/10", "fe80::/10", "127.0.0.0/8"):
        assert refused in rules, rules
    release_realm(rid)
    assert not namespace.exists()  # pasta and the namespace go with the realm


def test_cpu_quota_holds(make_realm):
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", "import time; time.sleep(300)")], limits=_CPU_LIMITED)
    spin = (
        "import os, time\n"
        "began = time.monotonic()\n"
        "while time.monotonic() - began < 1.5:\n"
        "    pass\n"
        "t = os.times()\n"
        "print(t.user + t.system)\n"
    )
    used = float(run_code(rid, "alpha", spin, timeout=30).output)
    # 5 % of a CPU for 1.5 s is ~0.08 s; an uncapped spin gets far more even on a
    # busy host (0.6 s seen with a load of 3 per core).
    assert used < 0.25, used
    group = cgroups.AgentCgroups(layout.install_tag(), rid, "alpha").path("cpu")
    stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
    assert int(stat["nr_throttled"]) > 0


_CPU_LIMITED = replace(SMALL, cpus=0.05)
