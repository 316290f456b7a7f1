"""The sandbox boundary, attacked as the runtime's uid and through run_code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from django.conf import settings

from realms.forge import cgroups, layout, procs
from realms.forge.runcode import run_code
from tests.realms.forge.conftest import (
    SMALL,
    escape_targets,
    processes_of,
    script_request,
    start,
    wait_for_file,
)
from tests.realms.forge.probes import DISK_FILL, ESCAPES, FORK_BOMB, MEMORY_HOG

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

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
result["memory"] = child(MEMORY_HOG)
with open("/home/agent/result.json.tmp", "w") as handle:
    json.dump(result, handle)
os.rename("/home/agent/result.json.tmp", "/home/agent/result.json")
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
    targets = escape_targets(rid, listener, "sk-virtual")
    targets_arg = json.dumps(targets)
    script = (
        RUNTIME_PROBE.replace("child(DISK_FILL)", f"child({DISK_FILL!r})")
        .replace("child(MEMORY_HOG)", f"child({MEMORY_HOG!r})")
        .replace("child(FORK_BOMB)", f"child({FORK_BOMB!r})")
    )
    probe = script_request("alpha", script, targets_arg)
    bravo = script_request("bravo", "import time; time.sleep(300)")
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
    rows = start(
        rid,
        [
            script_request("alpha", "import time; time.sleep(300)"),
            script_request("bravo", "import time; time.sleep(300)"),
        ],
    )
    runtime_pids = procs.descendants(rows[0].pid)
    targets = escape_targets(rid, listener, "sk-virtual")
    targets["pids"] = [str(p) for p in runtime_pids]
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


def test_open_egress_keeps_the_network_and_run_code_still_has_none(make_realm, listener):
    rid = make_realm().realm_id
    probe = (
        "import json, socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {listener}), timeout=2).close()\n"
        "    out = 'connected'\n"
        "except OSError as exc:\n"
        "    out = 'refused'\n"
        "open('/home/agent/net.txt', 'w').write(out)\n"
        "import time; time.sleep(300)\n"
    )
    start(rid, [script_request("alpha", probe)], egress="open")
    assert wait_for_file(layout.home_dir(rid, "alpha") / "net.txt") == "connected"
    code = ESCAPES + f"\nprint(tcp('127.0.0.1', {listener}))"
    assert run_code(rid, "alpha", code).output.startswith("refused")


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
