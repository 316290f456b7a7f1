"""Schedules on PostgreSQL: pit_realmtools as its own process under racing calls, and the
Warden's firing step in one process after another, as across a restart."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psycopg
import pytest

from tests.conftest import REPO
from tests.fixtures.postgres import last_line_of

from .test_postgres import _accepting, _race, _Token, pg_env  # noqa: F401 - a fixture

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

SETUP = """
import json
import django
django.setup()
from realms.realmtools.identity import mint_token
from tests.fixtures.realms import build_realm
agents = [{"id": "orin"}, {"id": "vela"}]
build_realm("r-sc", name="sc", state="running", agents=agents,
            spec={"mechanics": [{"kind": "schedules", "max_per_agent": 2}]})
print(json.dumps({a: mint_token("r-sc", a, "player", ["orin", "vela"]) for a in ["orin", "vela"]}))
"""

# One Warden process: everything due fires now; prints the schedule numbers fired.
FIRE = """
import json
import django
django.setup()
from realms.realmtools.schedules_wakes import fire_due
print(json.dumps(fire_due("r-sc", private=True)))
"""


def test_racing_schedules_are_bounded_and_fire_once_across_processes(pg_env, tmp_path):  # noqa: F811
    tokens = json.loads(last_line_of(SETUP, pg_env, timeout=60))
    sock = tmp_path / "rt.sock"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "pit_realmtools", "--socket", str(sock)],
        cwd=REPO,
        env=pg_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    orin = _Token(sock, tokens["orin"])
    try:
        deadline = time.monotonic() + 60
        while not _accepting(sock):
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "realmtools did not start"
            time.sleep(0.2)
        calls = [(orin, "schedule", {"note": f"n{n}", "after": "1h"}) for n in range(6)]
        results = _race(*calls)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert sum("scheduled" in r for r in results) == 2
    assert all("this realm's limit" in r["error"] for r in results if "scheduled" not in r)
    # Schedule 1 falls due; a Warden fires it and stops; the next one, a new process,
    # fires nothing more.
    url = pg_env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        conn.execute("UPDATE realmtools_schedule SET next_fire_ms = 1 WHERE number = 1")
    assert json.loads(last_line_of(FIRE, pg_env, timeout=60)) == [1]
    assert json.loads(last_line_of(FIRE, pg_env, timeout=60)) == []
    with psycopg.connect(url) as conn:
        wakes = conn.execute(
            "SELECT w.ref, w.state FROM realmtools_wake w JOIN realms_realm r"
            " ON r.id = w.realm_id WHERE r.realm_id = 'r-sc'"
        ).fetchall()
        held = conn.execute(
            "SELECT COUNT(*) FROM realmtools_schedule s JOIN realms_realm r"
            " ON r.id = s.realm_id WHERE r.realm_id = 'r-sc' AND s.agent_id = 'orin'"
        ).fetchone()
    assert wakes == [(1, "pending")]
    assert held == (2,)
