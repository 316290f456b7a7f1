"""``POST /api/realms`` under ``pit_serve``, the embedded platform with no broker: the
server process provisions and ticks the realm itself, to the referee's verdict.

A subprocess on a fresh home, driven over real HTTP with the operator token; real
Synapse, gateway (offline provider), realmtools and bwrap sandboxes.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.pitrun import (
    free_port,
    leftover_pids,
    pit_env,
    start_pit,
    stop_everything,
    wait_for_line,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

REALM = "tc-served-1"


def _wait_for_state(api: httpx.Client, wanted: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        body = api.get(f"/api/realms/{REALM}").json()
        if body.get("state") == wanted:
            return body
        time.sleep(1.0)
    raise AssertionError(f"{REALM} not {wanted} within {timeout_s}s: {body}")


def test_a_realm_launched_through_the_api_runs_to_its_verdict_under_pit_serve(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    log = tmp_path / "pit_serve.log"
    port = free_port()
    proc = start_pit(["pit_serve", "--port", str(port)], pit_env(home), log)
    try:
        wait_for_line(log, "login: ", proc, timeout=90)
        token = (home / "api-token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=30) as api:
            bad = api.post("/api/realms", json={"package": "toolcheck", "colour": "red"})
            assert bad.status_code == 400 and bad.json() == {"colour": "unknown field"}
            started = api.post("/api/realms", json={"package": "toolcheck", "realm_id": REALM})
            assert started.status_code == 202, started.text
            assert started.json() == {"realm_id": REALM, "state": "starting"}
            taken = api.post("/api/realms", json={"package": "toolcheck", "realm_id": REALM})
            assert taken.status_code == 409

            body = _wait_for_state(api, "archived", timeout_s=150)
            assert body["outcome"], body
            assert body["conclusion"]["reason"] == "referee_verdict", body
            assert body["active"] is False

            runs = api.get("/api/runs", params={"scenario": "toolcheck"}).json()["runs"]
            assert [r["realm_id"] for r in runs] == [REALM]
            assert runs[0]["outcome"] == body["outcome"] and runs[0]["state"] == "archived"
            stop = api.post(f"/api/realms/{REALM}/stop")
            assert stop.status_code == 409, stop.text
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    out = log.read_text()
    assert code == 0, out
    assert left == [], out
    assert f"provision: {REALM}" in out, out
    assert token not in out.replace(f"?token={token}", "")
