"""The development backend: plain processes, with a warning."""

from __future__ import annotations

import logging
import time

import pytest

from realms.forge import layout, procs
from realms.forge.runcode import run_code
from realms.forge.services import AgentSandboxRequest, stop_agent_sandbox
from tests.realms.forge.conftest import birth_config, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

SLEEPER = "import time; time.sleep(300)"


def test_process_backend_warns_and_runs(make_realm, settings, caplog):
    settings.BEARPIT_SANDBOX = "process"
    realm = make_realm()
    probe = "import os, time\nopen('started', 'w').write(os.getcwd())\ntime.sleep(300)"
    request = AgentSandboxRequest(
        agent_id="alpha",
        birth_config=birth_config("alpha"),
        resources={"probe.py": probe},
        argv=["/usr/bin/env", "python3", f"{layout.SANDBOX_HOME}/resources/probe.py"],
    )
    with caplog.at_level(logging.WARNING, logger="realms.forge"):
        rows = start(realm.realm_id, [request])
    assert "NO ISOLATION" in caplog.text
    assert rows[0].backend == "process"
    started = layout.home_dir(realm.realm_id, "alpha") / "started"
    deadline = time.monotonic() + 10
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert started.read_text() == str(layout.home_dir(realm.realm_id, "alpha"))
    result = run_code(realm.realm_id, "alpha", "print('sk-virtual-0123456789abcdef-alpha')")
    assert result.output.strip() == "[redacted]"
    assert stop_agent_sandbox(realm.realm_id, "alpha", "done") is True
    assert not procs.is_same_process(rows[0].pid, rows[0].pid_start_time)


def test_process_backend_stop_sweeps_escaped_children(make_realm, settings):
    settings.BEARPIT_SANDBOX = "process"
    realm = make_realm()
    probe = (
        "import os, subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'], start_new_session=True)\n"
        # Written whole, then renamed: the test never reads a half-written file.
        "open('child.pid.part', 'w').write(str(child.pid))\n"
        "os.rename('child.pid.part', 'child.pid')\n"
        "time.sleep(300)\n"
    )
    request = AgentSandboxRequest(
        agent_id="alpha",
        birth_config=birth_config("alpha"),
        resources={"probe.py": probe},
        argv=["/usr/bin/env", "python3", f"{layout.SANDBOX_HOME}/resources/probe.py"],
    )
    start(realm.realm_id, [request])
    pid_file = layout.home_dir(realm.realm_id, "alpha") / "child.pid"
    deadline = time.monotonic() + 10
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(pid_file.read_text())
    child_started = procs.start_time(child)
    assert procs.is_same_process(child, child_started)
    assert stop_agent_sandbox(realm.realm_id, "alpha", "done")
    assert not procs.is_same_process(child, child_started)
