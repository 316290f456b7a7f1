#!/usr/bin/env python3
"""Health check of one production process: exit 0 when it serves, 1 with a line when not.

    python deploy/healthcheck.py web|gateway|homeserver|realmtools|worker|beat

No Django: a check runs every few seconds and must not cost a settings load. It reads the
same BEARPIT_* variables the processes do (home, ports) and asks each one the cheapest
question that proves it serves: GET /health where there is one, a connection to the Unix
socket the sandboxes use otherwise, a Celery ping for the worker.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 5.0


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=TIMEOUT_S)
        self.path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(TIMEOUT_S)
        sock.connect(str(self.path))
        self.sock = sock


def home() -> Path:
    return Path(os.environ.get("BEARPIT_HOME") or Path.home() / ".bearpit").expanduser()


def host_header() -> str:
    """A name the web server accepts (BEARPIT_ALLOWED_HOSTS), or it answers 400."""
    allowed = [h.strip() for h in (os.environ.get("BEARPIT_ALLOWED_HOSTS") or "").split(",")]
    first = next((h for h in allowed if h), "localhost")
    if first == "*":
        return "localhost"
    return f"health{first}" if first.startswith(".") else first


def get_health(conn: http.client.HTTPConnection) -> str | None:
    try:
        conn.request("GET", "/health", headers={"Host": host_header()})
        status = conn.getresponse().status
    except OSError as exc:
        return f"no answer: {exc}"
    finally:
        conn.close()
    return None if status == 200 else f"/health answered {status}"


def check_web() -> str | None:
    port = int(os.environ.get("BEARPIT_PLATFORM_PORT") or 8765)
    return get_health(http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_S))


def check_gateway() -> str | None:
    return get_health(UnixHTTPConnection(home() / "run" / "gateway.sock"))


def check_homeserver() -> str | None:
    return get_health(UnixHTTPConnection(home() / "run" / "homeserver.sock"))


def check_realmtools() -> str | None:
    path = home() / "run" / "realmtools.sock"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(TIMEOUT_S)
            sock.connect(str(path))
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    return None


def check_worker() -> str | None:
    # Only this host's worker: a ping answered by another host would prove nothing here.
    # A worker host is started as ``-n celery@$BEARPIT_HOST_ID`` (docs/deploy.md).
    target = f"celery@{os.environ.get('BEARPIT_HOST_ID') or socket.gethostname()}"
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "bearpit", "inspect", "ping", "-d", target,
         "--timeout", str(TIMEOUT_S)],
        capture_output=True, text=True, check=False, timeout=TIMEOUT_S * 6,
    )  # fmt: skip
    return None if done.returncode == 0 else f"{target} did not answer a ping"


def check_beat() -> str | None:
    # Beat writes its schedule file when it starts and at least every three minutes
    # after, so a file older than that means a stalled or dead beat.
    path = home() / "beat-schedule"
    # shelve picks the file names (none, .db, or .dat/.dir beside each other).
    candidates = list(path.parent.glob(path.name + "*"))
    if not candidates:
        return f"{path}: no schedule file; beat has not started"
    age = time.time() - max(p.stat().st_mtime for p in candidates)
    return None if age < 300 else f"{path}: untouched for {age:.0f} s"


CHECKS = {
    "web": check_web,
    "gateway": check_gateway,
    "homeserver": check_homeserver,
    "realmtools": check_realmtools,
    "worker": check_worker,
    "beat": check_beat,
}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in CHECKS:
        print(f"usage: healthcheck.py {'|'.join(CHECKS)}", file=sys.stderr)
        return 2
    problem = CHECKS[argv[0]]()
    if problem is not None:
        print(f"{argv[0]}: unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
