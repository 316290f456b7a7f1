"""A run_code with a cancel event (a background job's kill) ends at once and takes its
whole process tree with it, on bwrap and on the docker backend."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from realms.forge.runcode import run_code
from tests.realms.forge.conftest import processes_of, script_request, start

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60, func_only=True)]

SLEEPER = "import time; time.sleep(300)"
TREE = (
    "import subprocess, time\n"
    "subprocess.Popen(['sleep', '120'])\n"
    "print('started', flush=True)\n"
    "time.sleep(120)"
)


def _cancelled_after(realm_id: str, seconds: float) -> tuple[Any, float]:
    cancel = threading.Event()
    threading.Timer(seconds, cancel.set).start()
    began = time.monotonic()
    result = run_code(realm_id, "alpha", TREE, timeout=60, cancel=cancel)
    return result, time.monotonic() - began


def test_cancel_kills_a_bwrap_run_and_its_children(make_realm):
    rid = make_realm().realm_id
    rows = start(rid, [script_request("alpha", SLEEPER)])
    result, took = _cancelled_after(rid, 1.5)
    assert result.timed_out and result.exit_code is None and "started" in result.output
    assert took < 5
    assert len(processes_of(rows[0].host_uid, expect=1)) == 1  # only the runtime is left


def test_cancel_kills_a_docker_run(make_realm, forge_settings, podman_url, agent_image):
    forge_settings.BEARPIT_SANDBOX = "docker"
    forge_settings.BEARPIT_DOCKER_URL = podman_url
    forge_settings.BEARPIT_DOCKER_IMAGE = agent_image
    forge_settings.BEARPIT_SANDBOX_STOP_GRACE = 1.0
    rid = make_realm().realm_id
    start(rid, [script_request("alpha", SLEEPER)])
    result, took = _cancelled_after(rid, 2.0)
    assert result.timed_out and result.exit_code is None and "started" in result.output
    assert took < 10
