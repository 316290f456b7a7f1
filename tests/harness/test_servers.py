"""scripts/test-servers: throw-away PostgreSQL and Redis for a run, or the configured ones."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from .run import REPO, clean_env

pytestmark = pytest.mark.timeout(120)

SCRIPT = REPO / "scripts" / "test-servers"
PROBE_DATABASE = f"probe_{secrets.token_hex(4)}"
PROBE = """
import json, os, psycopg, redis
pg = os.environ["BEARPIT_TEST_POSTGRES_URL"]
name = os.environ["PROBE_DATABASE"]
with psycopg.connect(pg.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
    conn.execute(f'CREATE DATABASE "{name}"')
    databases = [r[0] for r in conn.execute("SELECT datname FROM pg_database")]
    conn.execute(f'DROP DATABASE "{name}"')
rd = os.environ["BEARPIT_TEST_REDIS_URL"]
assert redis.Redis.from_url(rd).ping()
print(json.dumps({"pg": pg, "redis": rd, "databases": databases}))
"""


def served(env: dict[str, str]) -> dict[str, Any]:
    result = subprocess.run(
        [str(SCRIPT), sys.executable, "-c", PROBE],
        cwd=REPO,
        env={**env, "PROBE_DATABASE": PROBE_DATABASE},
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    seen: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return seen


def port_of(url: str) -> int:
    return int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_without_urls_it_starts_throw_away_servers_on_free_ports_and_removes_them():
    env = clean_env()
    env.pop("BEARPIT_TEST_POSTGRES_URL", None)
    env.pop("BEARPIT_TEST_REDIS_URL", None)
    # A temporary folder of its own: other runs on this host make and remove theirs.
    tmp = Path(tempfile.mkdtemp(prefix="bp-ts-"))
    tmp.chmod(0o755)  # the postgres user must reach its cluster in there
    env["TMPDIR"] = str(tmp)
    seen = served(env)
    pg_port, redis_port = port_of(seen["pg"]), port_of(seen["redis"])
    assert pg_port != 5432 and redis_port != 6379
    assert PROBE_DATABASE in seen["databases"]
    # Both are gone with their folder once the command is done (a server may take a moment
    # to close its socket after it was told to stop).
    deadline = time.monotonic() + 10
    while not (refused(pg_port) and refused(redis_port)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert refused(pg_port) and refused(redis_port)
    assert not list(tmp.glob("bearpit-test-servers.*"))
    tmp.rmdir()  # nothing else was left there either


def test_configured_urls_are_used_as_they_are():
    pg = os.environ.get("BEARPIT_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/bearpit")
    rd = os.environ.get("BEARPIT_TEST_REDIS_URL", "redis://127.0.0.1:6379")
    env = clean_env(BEARPIT_TEST_POSTGRES_URL=pg, BEARPIT_TEST_REDIS_URL=f"{rd}/15")
    seen = served(env)
    assert (seen["pg"], seen["redis"]) == (pg, f"{rd}/15")


def test_the_commands_exit_status_is_passed_on():
    result = subprocess.run(
        [str(SCRIPT), "sh", "-c", "exit 7"],
        cwd=REPO,
        env=clean_env(BEARPIT_TEST_POSTGRES_URL="postgres://x@127.0.0.1:1/x",
                      BEARPIT_TEST_REDIS_URL="redis://127.0.0.1:1"),
        capture_output=True,
        timeout=30,
        check=False,
    )  # fmt: skip
    assert result.returncode == 7
