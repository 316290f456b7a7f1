"""The realm lock on PostgreSQL: pit_realmtools as its own process, calls racing."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import REPO
from tests.fixtures.postgres import last_line_of, migrated_env

from .machines import AUCTION
from .test_concurrency_and_audit import _one

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]


SETUP = """
import json, sys
import django
django.setup()
from realms.realmtools.identity import mint_token
from tests.fixtures.realms import build_realm
machine = json.loads(sys.argv[1])
# zed is the machine's hidden spy: a role's members must be on the roster
agents = [{"id": "orin"}, {"id": "vela"}, {"id": "zed"}, {"id": "themis", "role": "referee"}]
build_realm("r-pg", name="pg", state="running", agents=agents,
            spec={"mechanics": [{"kind": "state-machine", "machine": machine}]})
roster = ["orin", "vela", "zed"]
print(json.dumps({
    "orin": mint_token("r-pg", "orin", "player", roster),
    "themis": mint_token("r-pg", "themis", "referee", roster),
}))
"""


class _Token:
    def __init__(self, path: Path, token: str) -> None:
        self.path = path
        self.token = token


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "realmtools") as env:
        yield env


def _accepting(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def _race(*calls):
    async def go():
        return await asyncio.gather(*(_one(agent, name, args) for agent, name, args in calls))

    return asyncio.run(go())


def test_racing_writers_are_serialised_on_postgres(pg_env, tmp_path):
    tokens = json.loads(last_line_of(SETUP, pg_env, json.dumps(AUCTION), timeout=60))
    sock = tmp_path / "rt.sock"
    server = subprocess.Popen(
        [sys.executable, "manage.py", "pit_realmtools", "--socket", str(sock)],
        cwd=REPO,
        env=pg_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    orin, ref = _Token(sock, tokens["orin"]), _Token(sock, tokens["themis"])
    try:
        deadline = time.monotonic() + 60
        while not _accepting(sock):
            assert server.poll() is None, server.stdout.read() if server.stdout else ""
            assert time.monotonic() < deadline, "realmtools did not start"
            time.sleep(0.2)
        _race((ref, "game_set", {"key": "lot", "value": "vase"}))
        _race((ref, "game_act", {"transition": "start", "args": {"first": "orin"}}))
        sealed = _race(
            *[(orin, "submit_sealed", {"round": "R1", "payload": str(n)}) for n in range(8)]
        )
        acts = _race(*[(orin, "game_act", {"transition": "bid"}) for _ in range(8)])
    finally:
        server.terminate()
        server.communicate(timeout=30)
    assert sum(r.startswith("Sealed") for r in sealed) == 1
    assert sum("error" not in r for r in acts) == 1
    url = pg_env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        kinds: dict[str, int] = dict(
            conn.execute(
                "SELECT kind, COUNT(*) FROM chronicle_event WHERE realm_id = 'r-pg' GROUP BY kind"
            ).fetchall()
        )
        ops = [
            row[0]
            for row in conn.execute(
                "SELECT payload->>'op' FROM chronicle_event"
                " WHERE realm_id = 'r-pg' AND kind = 'game' ORDER BY id"
            ).fetchall()
        ]
    assert kinds["sealed_submit"] == 1
    assert kinds["machine"] == 1
    assert ops.count("act") == 2  # start and the one bid that won the race
    assert ops.count("reject") == 7
