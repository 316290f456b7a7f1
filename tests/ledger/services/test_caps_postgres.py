"""The same cap physics on PostgreSQL, with the gateway as its own process (``pit_gateway``)."""

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
from tests.e2e.pitrun import free_port
from tests.fixtures.postgres import last_line_of, migrated_env
from tests.ledger.load import hammer

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(240)]


MINT = """
import json, random, sys
from decimal import Decimal
import django
django.setup()
from ledger.services.profiles import seed_profiles
from ledger.services.keys import mint_virtual_key
seed_profiles()
rng = random.Random(5)
script = "loop: true\\nsteps:\\n  - text: " + "lorem ipsum dolor sit amet " * 8 + "\\n"
out = []
for i in range(12):
    cap = Decimal(f"{rng.uniform(0.0004, 0.004):.6f}")
    _, secret = mint_virtual_key(realm_id="r-pg", agent_id=f"agent-{i}", provider="offline",
        model="scripted-medium", cap_usd=cap, on_exhausted="starve", script=script)
    out.append(secret)
print(json.dumps(out))
"""


@pytest.fixture
def pg_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "ledger") as env:
        yield env


def test_concurrent_calls_never_overspend_on_postgres(pg_env: dict[str, str]) -> None:
    secrets = json.loads(last_line_of(MINT, pg_env, timeout=60))
    port = free_port()
    gateway = subprocess.Popen(
        [sys.executable, "manage.py", "pit_gateway", "--port", str(port), "--no-uds"],
        cwd=REPO,
        env=pg_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert gateway.poll() is None, gateway.stdout.read() if gateway.stdout else ""
                assert time.monotonic() < deadline, "gateway did not start"
                time.sleep(0.1)
        result = asyncio.run(
            hammer(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                secrets,
                calls=1000,
                concurrency=32,
                seed=3,
            )
        )
    finally:
        gateway.terminate()
        out, _ = gateway.communicate(timeout=30)
    assert sum(result.statuses.values()) == 1000
    assert set(result.statuses) <= {200, 402}, result.statuses
    assert result.statuses[402] > 100 and result.statuses[200] > 100
    with psycopg.connect(
        pg_env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    ) as conn:
        rows = conn.execute(
            "SELECT k.agent_id, k.cap_nusd, k.spent_nusd, k.reserved_nusd, k.calls,"
            " COALESCE(SUM(s.cost_nusd), 0), COUNT(s.id)"
            " FROM ledger_virtualkey k LEFT JOIN ledger_spend s ON s.key_id = k.id"
            " WHERE k.realm_id = 'r-pg' GROUP BY k.id"
        ).fetchall()
        events = conn.execute(
            "SELECT payload FROM chronicle_event WHERE realm_id = 'r-pg' AND kind = 'spend'"
        ).fetchall()
    assert len(rows) == 12
    for agent, cap, spent, reserved, calls, summed, count in rows:
        assert spent <= cap, agent
        assert reserved == 0 and spent == summed and calls == count
    # Spend events carry each settlement batch's delta: together they are the spend.
    total = sum(r[2] for r in rows)
    assert 0 < len(events) <= result.statuses[200]
    assert sum(e[0]["usd"] for e in events) == pytest.approx(total / 1e9, rel=1e-6)
    assert b"Traceback" not in out
