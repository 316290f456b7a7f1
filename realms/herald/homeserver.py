"""Lifecycle of the embedded Synapse homeserver.

``ensure_homeserver()`` starts Synapse as a subprocess unless one is already
running for this ``BEARPIT_HOME`` (pidfile + ``GET /health``) and returns a handle
that knows whether it started it, so a command stops only what it started.
Start-up waits for health with a deadline and fails with a clear message that
includes the end of Synapse's log; it never hangs.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx
import psycopg
from django.conf import settings
from psycopg import sql
from psycopg.conninfo import make_conninfo

from realms.herald.config import HomeserverConfig, write_config


class HomeserverError(Exception):
    """The homeserver could not be started or reached.

    ``summary`` is one line that says what went wrong and what to do about it; the
    message itself may carry the end of the homeserver's logs as well.
    """

    def __init__(self, message: str, summary: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary or message.splitlines()[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def check_port(port: int) -> None:
    """Refuse at once, and say why, when the client port is taken."""
    if _port_taken(port):
        raise HomeserverError(
            f"cannot start the homeserver: port {port} on 127.0.0.1 is already in use "
            "(set BEARPIT_MATRIX_PORT to a free port, or 0 to pick one)"
        )


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def healthy(socket_path: Path, timeout: float = 2.0) -> bool:
    """``GET /health`` over the homeserver's Unix socket."""
    if not socket_path.exists():
        return False
    transport = httpx.HTTPTransport(uds=str(socket_path))
    try:
        with httpx.Client(transport=transport, timeout=timeout) as client:
            return client.get("http://homeserver/health").status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class HomeserverHandle:
    """A running homeserver; ``started`` says whether this process started it."""

    config: HomeserverConfig
    pid: int
    started: bool
    external_url: str | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.external_url or f"http://127.0.0.1:{self.config.port}"

    @property
    def socket_path(self) -> Path:
        return self.config.socket_path

    def alive(self) -> bool:
        if self.external_url:
            return True
        if self._process is not None:
            return self._process.poll() is None
        return _pid_alive(self.pid)

    def _wait_gone(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return True
            time.sleep(0.05)
        return not self.alive()

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the homeserver (SIGTERM, then SIGKILL after ``timeout``)."""
        if self.external_url:
            raise HomeserverError("the homeserver is external: the platform does not stop it")
        if not self.alive():
            self._forget()
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        if not self._wait_gone(timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._wait_gone(5.0)
        self._forget()

    def kill(self) -> None:
        """Kill it hard, as a crash would."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._wait_gone(5.0)
        self._forget()

    def _forget(self) -> None:
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=1)
        with contextlib.suppress(FileNotFoundError):
            self.config.pid_path.unlink()


def running_homeserver(config: HomeserverConfig) -> HomeserverHandle | None:
    """The homeserver already serving ``config``'s home, if any."""
    try:
        pid_text, port_text = config.pid_path.read_text(encoding="utf-8").split()
        pid, port = int(pid_text), int(port_text)
    except (OSError, ValueError):  # none yet, or a home the start will say is unusable
        return None
    if not _pid_alive(pid) or not healthy(config.socket_path):
        return None
    return HomeserverHandle(config=replace(config, port=port), pid=pid, started=False)


def prepare_database(config: HomeserverConfig) -> None:
    """Create the homeserver's PostgreSQL database (C collation) if it is missing."""
    if config.database is None:
        return
    db = config.database
    name = f"{db.name}_synapse"
    conninfo = make_conninfo(
        dbname=db.name,
        user=db.user or None,
        password=db.password or None,
        host=db.host or None,
        port=db.port or None,
    )
    with psycopg.connect(conninfo, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if exists is None:
            conn.execute(
                sql.SQL(
                    "CREATE DATABASE {} ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C' "
                    "TEMPLATE template0"
                ).format(sql.Identifier(name))
            )


def start_homeserver(
    config: HomeserverConfig, *, timeout: float = 60.0, foreground: bool = False
) -> HomeserverHandle:
    """Write the config and start Synapse; return once ``/health`` answers."""
    if config.port == 0:
        config = replace(config, port=free_port())
    check_port(config.port)
    try:
        write_config(config)
    except OSError as exc:
        raise HomeserverError(
            f"cannot write the homeserver's files under {config.data_dir}: "
            f"{exc.strerror or exc}; make it a folder this user can write"
        ) from exc
    prepare_database(config)
    with contextlib.suppress(FileNotFoundError):
        config.socket_path.unlink()  # a stale socket from a crash blocks the listener
    command = [sys.executable, "-m", "synapse.app.homeserver", "-c", str(config.config_path)]
    stderr = config.stderr_path.open("ab")
    try:
        process = subprocess.Popen(
            command,
            cwd=config.data_dir,
            stdin=subprocess.DEVNULL,
            stdout=stderr,
            stderr=stderr,
            start_new_session=not foreground,
        )
    finally:
        stderr.close()
    config.pid_path.write_text(f"{process.pid} {config.port}\n", encoding="utf-8")
    handle = HomeserverHandle(config=config, pid=process.pid, started=True, _process=process)
    _wait_healthy(handle, process.poll, timeout)
    return handle


def _wait_healthy(handle: HomeserverHandle, poll: Callable[[], int | None], timeout: float) -> None:
    config = handle.config
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = poll()
        if code is not None:
            handle._forget()
            raise HomeserverError(
                f"the homeserver exited with status {code} during start-up "
                f"(config {config.config_path}). Last lines of its logs:\n"
                f"{_tail(config.stderr_path)}\n{_tail(config.log_path)}".rstrip(),
                summary=(
                    f"the homeserver exited during start-up: {_last_words(config)}; fix what "
                    f"it names under {config.data_dir} (its log: {config.stderr_path})"
                ),
            )
        if healthy(config.socket_path, timeout=1.0):
            return
        time.sleep(0.1)
    handle.stop(timeout=5)
    raise HomeserverError(
        f"the homeserver did not become healthy within {timeout:.0f} s "
        f"(config {config.config_path}). Last lines of its logs:\n"
        f"{_tail(config.stderr_path)}\n{_tail(config.log_path)}".rstrip(),
        summary=(
            f"the homeserver did not answer within {timeout:.0f} s: read its log "
            f"{config.log_path} for the cause"
        ),
    )


def _last_words(config: HomeserverConfig) -> str:
    """The last thing the homeserver said before it exited, as one line."""
    for path in (config.stderr_path, config.log_path):
        lines = [line.strip() for line in _tail(path).splitlines() if line.strip()]
        if lines:
            return lines[-1]
    return "it wrote nothing"


def _external(config: HomeserverConfig, url: str) -> HomeserverHandle:
    try:
        response = httpx.get(f"{url.rstrip('/')}/health", timeout=5)
    except httpx.HTTPError as exc:
        raise HomeserverError(f"BEARPIT_MATRIX_URL {url}: homeserver unreachable: {exc}") from exc
    if response.status_code != 200:
        raise HomeserverError(f"BEARPIT_MATRIX_URL {url}: /health answered {response.status_code}")
    return HomeserverHandle(config=config, pid=0, started=False, external_url=url)


def ensure_homeserver(
    config: HomeserverConfig | None = None, *, timeout: float = 60.0
) -> HomeserverHandle:
    """The homeserver to use: the external one if configured (checked, never started),
    else the embedded one, started if it is not already running."""
    if config is None:
        config = HomeserverConfig.from_settings()
        if settings.BEARPIT_MATRIX_URL:
            return _external(config, settings.BEARPIT_MATRIX_URL)
    return running_homeserver(config) or start_homeserver(config, timeout=timeout)
