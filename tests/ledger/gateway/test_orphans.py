"""A gateway killed mid-call leaves a reservation nobody can settle: the next gateway of
the host lets it go (and chronicles it) before its first call, while a reservation of a
gateway that is still alive is never touched."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from cryptography.fernet import Fernet

from tests.conftest import REPO
from tests.e2e.pitrun import free_port
from tests.fixtures.postgres import last_line_of, migrated_env
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

SETUP = """
import sys
from decimal import Decimal
import django
django.setup()
from ledger.models import ProviderProfile
from ledger.services.credentials import add_credential
from ledger.services.keys import mint_virtual_key
from ledger.services.profiles import seed_profiles
seed_profiles()
tier = {"model": "hang", "input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}
ProviderProfile.objects.create(name="fake", transport="openai", api_key_ref="fake-main",
    categories={t: tier for t in ("small", "medium", "large")})
add_credential(handle="fake-main", provider="fake", api_key="sk-test-orphans-0123456789",
    api_base=sys.argv[1])
_, secret = mint_virtual_key(realm_id="r-orphan", agent_id="ping", provider="fake",
    model="hang", cap_usd=Decimal("1"), on_exhausted="starve",
    input_cost_per_token=Decimal("1e-6"), output_cost_per_token=Decimal("2e-6"))
print(secret)
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    with migrated_env(tmp_path / "home", "orphans") as env:
        env["BEARPIT_KEYSTORE_KEY"] = Fernet.generate_key().decode()
        yield env


def _gateway(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "pit_gateway", "--port", str(port), "--no-uds"],
        cwd=REPO,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            assert proc.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "the gateway did not start"
            time.sleep(0.05)


def _key(env: dict[str, str]) -> tuple[int, str]:
    url = env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT reserved_nusd, reserved_by FROM ledger_virtualkey WHERE realm_id = 'r-orphan'"
        ).fetchone()
    assert row is not None
    return int(row[0]), str(row[1])


def _released(env: dict[str, str]) -> list[dict[str, object]]:
    url = env["BEARPIT_DATABASE_URL"].replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT payload FROM chronicle_event WHERE realm_id = 'r-orphan' AND kind = 'system'"
        ).fetchall()
    return [r[0] for r in rows if r[0].get("event") == "reservation_released"]


def _call(port: int, secret: str) -> threading.Thread:
    body = {"model": "x", "messages": [{"role": "user", "content": "hello"}]}

    def post() -> None:
        # Its gateway is killed under it: that is the point.
        with contextlib.suppress(httpx.HTTPError):
            httpx.post(
                f"http://127.0.0.1:{port}/v1/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {secret}"},
                timeout=60,
            )

    call = threading.Thread(target=post, daemon=True)
    call.start()
    return call


def test_a_killed_gateways_reservation_is_released_by_the_next_but_a_live_ones_is_not(
    env: dict[str, str], tmp_path: Path
) -> None:
    upstream = FakeUpstream().start()
    started: list[subprocess.Popen[bytes]] = []
    try:
        secret = last_line_of(SETUP, env, upstream.base, timeout=60)
        first, port = _gateway(env, tmp_path / "first.log")
        started.append(first)
        _call(port, secret)
        deadline = time.monotonic() + 15
        while _key(env)[0] == 0:
            assert time.monotonic() < deadline, "the call never reserved"
            time.sleep(0.02)
        held, holder = _key(env)
        assert f":{first.pid}:" in holder

        # A second gateway while the first still runs: its call may yet settle.
        second, _ = _gateway(env, tmp_path / "second.log")
        started.append(second)
        assert _key(env) == (held, holder)
        assert _released(env) == []

        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        assert _key(env)[0] == held, "nothing but a gateway settles or releases"

        third, _ = _gateway(env, tmp_path / "third.log")
        started.append(third)
        assert _key(env) == (0, "")
        [event] = _released(env)
        assert event["agent"] == "ping"
        assert event["usd"] == pytest.approx(held / 1e9)
        assert "released" in (tmp_path / "third.log").read_text()
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)
        upstream.stop()
