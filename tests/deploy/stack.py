"""The production stack's processes, each its own OS process, for the deploy tests:
a Redis with a password, a fresh PostgreSQL database, the environment production needs,
and a small handle that starts, checks and stops the processes."""

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

import pytest
from cryptography.fernet import Fernet

from tests.e2e.pitrun import REPO, free_port, pit_env, stop_everything
from tests.fixtures.postgres import fresh_database

HEALTHCHECK = REPO / "deploy" / "healthcheck.py"
PY = sys.executable


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
        wait_for(lambda: _redis_answers(port), "the test's Redis", 20)
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


def wait_for(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def production_env(home: Path, database: str, redis_url: str, **extra: str) -> dict[str, str]:
    """What every process of one deployment shares (``extra`` on top)."""
    return pit_env(
        home,
        BEARPIT_PRODUCTION="true",
        BEARPIT_DATABASE_URL=database,
        BEARPIT_REDIS_URL=redis_url,
        BEARPIT_SECRET_KEY=secrets.token_urlsafe(48),
        BEARPIT_KEYSTORE_KEY=Fernet.generate_key().decode(),
        BEARPIT_API_TOKEN=secrets.token_urlsafe(32),
        # Not localhost first: the web health check must send a name the server accepts.
        BEARPIT_ALLOWED_HOSTS="bearpit.test,127.0.0.1",
        BEARPIT_MATRIX_PORT=str(free_port()),
        BEARPIT_GATEWAY_PORT=str(free_port()),
        **extra,
    )


def migrate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [PY, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def worker_argv(host_id: str | None = None, concurrency: int = 2) -> list[str]:
    """A worker host's command: its node is named after its host id (the health check
    pings that name)."""
    name = ["-n", f"celery@{host_id}"] if host_id else []
    return [PY, "-m", "celery", "-A", "bearpit", "worker", *name,
            "--concurrency", str(concurrency), "--loglevel", "INFO"]  # fmt: skip


class Stack:
    """Processes of one host: each named, logging to ``logs/<name>.log``."""

    def __init__(self, home: Path, env: dict[str, str], logs: Path) -> None:
        self.home, self.env, self.logs = home, env, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = (self.logs / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            argv, cwd=REPO, env=env or self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def check(self, name: str, kind: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(HEALTHCHECK), kind or name],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip

    def healthy(self, name: str, kind: str | None = None) -> bool:
        proc = self.procs[name]
        assert proc.poll() is None, f"{name} exited ({proc.returncode}):\n{self.log(name)}"
        return self.check(name, kind).returncode == 0

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]

    def kill(self, name: str) -> None:
        """SIGKILL the process and its pool children at once, as when their host dies
        (sandboxes started in a session of their own outlive it)."""
        proc = self.procs[name]
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

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


def api(port: int, token: str, method: str, path: str, body: object = None) -> object:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (our own loopback)
        return json.loads(response.read())
