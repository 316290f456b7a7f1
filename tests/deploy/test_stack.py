"""The production stack as deploy/compose.yaml runs it, each process its own OS process:
migrate, web (daphne on bearpit.asgi:application), the homeserver, the gateway,
realmtools, a Celery worker and a separate beat, with ``BEARPIT_PRODUCTION`` on against
the test run's PostgreSQL and a password-protected Redis of its own. Every process passes
its health check (deploy/healthcheck.py), a realm launched through the HTTP API reaches
the referee's verdict, and beat's tick moved it (the worker runs no beat of its own).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from cryptography.fernet import Fernet

from tests.e2e.pitrun import REPO, free_port, pit_env, stop_everything
from tests.fixtures.postgres import fresh_database

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(300)]

HEALTHCHECK = REPO / "deploy" / "healthcheck.py"


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("deploy") as url:
        yield url


@pytest.fixture
def redis_with_password(tmp_path: Path) -> Iterator[str]:
    """A Redis server of this test's own that refuses clients without its password."""
    server = shutil.which("redis-server")
    assert server, "redis-server is not installed (scripts/test --setup installs it)"
    port, password = free_port(), secrets.token_hex(16)
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--requirepass", password, "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _wait(lambda: _redis_answers(port), "the test's Redis", 20)
        yield f"redis://:{password}@127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _redis_answers(port: int) -> bool:
    import socket

    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"-NOAUTH")
    except OSError:
        return False


def _wait(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


class Stack:
    def __init__(self, home: Path, env: dict[str, str], logs: Path) -> None:
        self.home, self.env, self.logs = home, env, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str]) -> None:
        out = (self.logs / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            argv, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def check(self, name: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(HEALTHCHECK), name],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    def healthy(self, name: str) -> bool:
        proc = self.procs[name]
        assert proc.poll() is None, f"{name} exited ({proc.returncode}):\n{self.log(name)}"
        return self.check(name).returncode == 0

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        stop_everything(self.home)


def _api(port: int, token: str, method: str, path: str, body: object = None) -> object:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (our own loopback)
        return json.loads(response.read())


def test_the_production_stack_runs_a_realm_launched_through_the_api(
    tmp_path: Path, database: str, redis_with_password: str
) -> None:
    home = tmp_path / "home"
    token = secrets.token_urlsafe(32)
    env = pit_env(
        home,
        BEARPIT_PRODUCTION="true",
        BEARPIT_DATABASE_URL=database,
        BEARPIT_REDIS_URL=redis_with_password,
        BEARPIT_SECRET_KEY=secrets.token_urlsafe(48),
        BEARPIT_KEYSTORE_KEY=Fernet.generate_key().decode(),
        BEARPIT_API_TOKEN=token,
        # Not localhost first: the web health check must send a name the server accepts.
        BEARPIT_ALLOWED_HOSTS="bearpit.test,127.0.0.1",
        BEARPIT_MATRIX_PORT=str(free_port()),
        BEARPIT_GATEWAY_PORT=str(free_port()),
    )
    web_port = int(env["BEARPIT_PLATFORM_PORT"])
    stack = Stack(home, env, tmp_path)
    py = sys.executable
    processes = ("web", "homeserver", "gateway", "realmtools", "worker", "beat")
    # Before anything runs, every health check says so (they can fail).
    for name in processes:
        down = stack.check(name)
        assert down.returncode == 1 and down.stderr.startswith(f"{name}: unhealthy: "), down
    try:
        migrate = subprocess.run(
            [py, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
        )  # fmt: skip
        assert migrate.returncode == 0, migrate.stdout + migrate.stderr
        stack.start("web", [py, "-m", "daphne", "-b", "127.0.0.1", "-p", str(web_port),
                            "bearpit.asgi:application"])  # fmt: skip
        stack.start("homeserver", [py, "manage.py", "pit_homeserver"])
        stack.start("gateway", [py, "manage.py", "pit_gateway"])
        stack.start("realmtools", [py, "manage.py", "pit_realmtools"])
        stack.start("worker", [py, "-m", "celery", "-A", "bearpit", "worker",
                               "--concurrency", "2", "--loglevel", "INFO"])  # fmt: skip
        stack.start("beat", [py, "-m", "celery", "-A", "bearpit", "beat", "--loglevel", "INFO"])
        for name in processes:
            _wait(lambda name=name: stack.healthy(name), f"{name} to be healthy", 120)  # type: ignore[misc]

        launched = _api(web_port, token, "POST", "/api/realms",
                        {"package": "toolcheck", "realm_id": "deploy-1"})  # fmt: skip
        assert launched == {"realm_id": "deploy-1", "state": "starting"}

        def ended() -> bool:
            state = _api(web_port, token, "GET", "/api/realms/deploy-1")
            return state["state"] in ("archived", "failed", "interrupted")  # type: ignore[index]

        _wait(ended, "the realm to end", 200)
        realm = _api(web_port, token, "GET", "/api/realms/deploy-1")
    finally:
        stack.stop_all()
    logs = "\n".join(f"--- {name}\n{stack.log(name)}" for name in stack.procs)
    assert realm["state"] == "archived", logs  # type: ignore[index]
    with psycopg.connect(database) as conn:
        verdicts = conn.execute(
            "SELECT payload FROM chronicle_event WHERE realm_id = 'deploy-1' AND kind = 'verdict'"
        ).fetchall()
    assert [v[0]["outcome"] for v in verdicts] == ["ping wins the relay"], logs
    # The ticks came from the separate beat: it sent them, the worker ran them.
    # The whole log: what beat prints as it stops can fill the tail the others show.
    beat_log = (stack.logs / "beat.log").read_text(errors="replace")
    assert "Sending due task" in beat_log and "warden.tick_all" in beat_log, logs
