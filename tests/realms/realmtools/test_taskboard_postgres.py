"""Racing claims on PostgreSQL: pit_realmtools as its own process, its threads contending."""

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
agents = [{"id": "orin"}, {"id": "vela"}, {"id": "zed"}]
build_realm("r-tb", name="tb", state="running", agents=agents,
            spec={"mechanics": [{"kind": "task-board"}]})
roster = ["orin", "vela", "zed"]
print(json.dumps({a: mint_token("r-tb", a, "player", roster) for a in roster}))
"""


def test_racing_claims_are_granted_once_each_on_postgres(pg_env, tmp_path):  # noqa: F811
    tokens = json.loads(last_line_of(SETUP, pg_env, timeout=60))
    sock = tmp_path / "rt.sock"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "pit_realmtools", "--socket", str(sock)],
        cwd=REPO,
        env=pg_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    agents = [_Token(sock, tokens[a]) for a in ("orin", "vela", "zed")]
    try:
        deadline = time.monotonic() + 60
        while not _accepting(sock):
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "realmtools did not start"
            time.sleep(0.2)
        added = _race(*[(agents[0], "task_add", {"title": f"part {n}"}) for n in range(3)])
        claims = [(a, "task_claim", {"id": n}) for n in (1, 2, 3) for a in agents]
        results = _race(*claims, *claims)
    finally:
        server.terminate()
        server.communicate(timeout=30)
    # Concurrent adds still number the tasks 1, 2, 3.
    assert sorted(r["added"]["id"] for r in added) == [1, 2, 3]
    granted = sorted(r["claimed"]["id"] for r in results if "claimed" in r)
    assert granted == [1, 2, 3]
    assert sum("error" in r for r in results) == len(results) - 3
    url = pg_env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        claimed = conn.execute(
            "SELECT payload->>'task', COUNT(*) FROM chronicle_event WHERE realm_id = 'r-tb'"
            " AND kind = 'task' AND payload->>'op' = 'claim' GROUP BY 1 ORDER BY 1"
        ).fetchall()
        rows = conn.execute(
            "SELECT t.number, t.state FROM realmtools_task t JOIN realms_realm r"
            " ON r.id = t.realm_id WHERE r.realm_id = 'r-tb' ORDER BY t.number"
        ).fetchall()
    assert claimed == [("1", 1), ("2", 1), ("3", 1)]
    assert rows == [(1, "claimed"), (2, "claimed"), (3, "claimed")]
