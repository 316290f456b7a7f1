"""Placement is the database's: worker hosts racing for the same pending realms on
PostgreSQL, each claimer its own process (as on separate hosts).

Every claimer tries every realm, in the same order, as fast as it can. A claim that reads
and then writes would let two hosts both take one realm, or one host take more than its
capacity.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import REPO
from tests.fixtures.postgres import last_line_of, migrated_env

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

REALMS = 150

SETUP = """
import sys
import django
django.setup()
from django.utils import timezone
from realms.models import Host, Realm
now = timezone.now()
for host_id, capacity in (("alpha", int(sys.argv[1])), ("beta", int(sys.argv[2]))):
    Host.objects.create(host_id=host_id, capacity=capacity, backend="process", state="up",
                        last_heartbeat=now, started_at=now)
Realm.objects.bulk_create(
    [Realm(realm_id=f"race-{i:03d}", package_name="toolcheck") for i in range(int(sys.argv[3]))]
)
print("ok")
"""

CLAIMER = """
import json, os, sys, time
import django
django.setup()
from django.db import connection
from realms.hosts.placement import Claim, claim_realm
host_id, count, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
connection.ensure_connection()
open(f"{go}.ready.{os.getpid()}", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
ids = [f"race-{i:03d}" for i in range(count)]
placed = [realm_id for realm_id in ids if claim_realm(realm_id, host_id) is Claim.PLACED]
print(json.dumps(placed))
"""


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "place") as env:
        yield env


def _race(env: dict[str, str], go: Path, hosts: list[str]) -> list[list[str]]:
    argv = [[sys.executable, "-c", CLAIMER, host_id, str(REALMS), str(go)] for host_id in hosts]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    claimers = [subprocess.Popen(a, cwd=REPO, env=env, **pipes) for a in argv]  # type: ignore[call-overload]
    deadline = time.monotonic() + 120
    while len(list(go.parent.glob(f"{go.name}.ready.*"))) < len(claimers):
        assert time.monotonic() < deadline, "the claimers never got ready"
        time.sleep(0.05)
    go.touch()
    results = []
    for claimer in claimers:
        out, err = claimer.communicate(timeout=180)
        assert claimer.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def _hosts_of(env: dict[str, str]) -> dict[str, str | None]:
    with psycopg.connect(env["BEARPIT_DATABASE_URL"]) as conn:
        rows = conn.execute("SELECT realm_id, host_id FROM realms_realm").fetchall()
    return dict(rows)


def test_two_hosts_racing_for_every_realm_never_both_take_one(
    pg_env: dict[str, str], tmp_path: Path
) -> None:
    last_line_of(SETUP, pg_env, "1000", "1000", str(REALMS), timeout=60)
    alpha, beta = _race(pg_env, tmp_path / "go", ["alpha", "beta"])
    wins = Counter([*alpha, *beta])
    assert set(wins) == {f"race-{i:03d}" for i in range(REALMS)}
    assert [realm for realm, n in wins.items() if n > 1] == []
    # Each realm's row names the host that was told it won.
    placed = _hosts_of(pg_env)
    assert {r: h for r, h in placed.items() if h == "alpha"} == dict.fromkeys(alpha, "alpha")
    assert {r: h for r, h in placed.items() if h == "beta"} == dict.fromkeys(beta, "beta")


def test_one_hosts_racing_workers_never_pass_its_capacity(
    pg_env: dict[str, str], tmp_path: Path
) -> None:
    last_line_of(SETUP, pg_env, "3", "1", str(REALMS), timeout=60)
    # Three worker processes of one host, and one of another.
    results = _race(pg_env, tmp_path / "go", ["alpha", "alpha", "alpha", "beta"])
    # A realm already placed on its host counts as placed for each of the host's workers
    # (a repeat delivery): provisioning's own claim lets one of them build it.
    alpha = {realm for found in results[:3] for realm in found}
    assert len(alpha) == 3, results
    assert len(results[3]) == 1 and results[3][0] not in alpha, results
    placed = _hosts_of(pg_env)
    assert Counter(placed.values()) == Counter({None: REALMS - 4, "alpha": 3, "beta": 1})
