"""The cap check is the database's: reservations raced from several processes on one key.

The gateway's own queue serialises the reservations of one process, so only separate
processes (several gateways on one database) show whether the check is atomic: here each
worker grabs the only slot a key's cap has, looks at the row while it holds it, and gives it
back, as fast as it can. A check that reads and then writes lets two holders in at once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.conftest import REPO
from tests.fixtures.postgres import last_line_of, migrated_env

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]

AMOUNT = 1000  # n$ per reservation; the cap holds exactly one

MINT = """
import django
django.setup()
from decimal import Decimal
from ledger.services.profiles import seed_profiles
from ledger.services.keys import mint_virtual_key
seed_profiles()
key, _ = mint_virtual_key(realm_id="r-race", agent_id="a", provider="offline",
    model="scripted-medium", cap_usd=Decimal("0.000001"), on_exhausted="starve")
print(key.pk)
"""

WORKER = """
import json, os, sys, time
import django
django.setup()
from django.db import connection
from ledger.models import VirtualKey
from ledger.services import spend
key_id, amount, rounds, go = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
connection.ensure_connection()
open(f"{go}.ready.{os.getpid()}", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
granted = overlaps = 0
for _ in range(rounds):
    if spend.reserve_many([(key_id, "r-race", amount)])[0] is None:
        granted += 1
        held = VirtualKey.objects.filter(pk=key_id).values_list("reserved_nusd", flat=True)[0]
        if held > amount:
            overlaps += 1
        spend.release_many([(key_id, amount)])
print(json.dumps({"granted": granted, "overlaps": overlaps}))
"""

WORKERS = 4
ROUNDS = 400


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "race") as env:
        yield env


def test_reservations_raced_from_processes_never_pass_the_cap(
    pg_env: dict[str, str], tmp_path: Path
) -> None:
    key_id = last_line_of(MINT, pg_env, timeout=60)
    go = tmp_path / "go"
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, key_id, str(AMOUNT), str(ROUNDS), str(go)],
            cwd=REPO,
            env=pg_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(WORKERS)
    ]
    try:
        deadline = time.monotonic() + 90
        while len(list(tmp_path.glob("go.ready.*"))) < WORKERS:
            assert all(w.poll() is None for w in workers), [w.communicate() for w in workers]
            assert time.monotonic() < deadline, "workers did not get ready"
            time.sleep(0.05)
        go.touch()
        results = []
        for w in workers:
            out, err = w.communicate(timeout=180)
            assert w.returncode == 0, err[-2000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
    # Every worker got the slot now and then, and no two ever held it at once.
    assert sum(r["granted"] for r in results) >= 10, results
    assert sum(r["overlaps"] for r in results) == 0, results
    with psycopg.connect(
        pg_env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    ) as conn:
        row = conn.execute(
            "SELECT cap_nusd, reserved_nusd, spent_nusd FROM ledger_virtualkey WHERE id = %s",
            [int(key_id)],
        ).fetchone()
    assert row == (AMOUNT, 0, 0)
