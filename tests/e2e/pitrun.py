"""Running ``pit_up`` as a user would: a subprocess with its own BEARPIT_HOME.

The subprocess uses the production settings module on a fresh SQLite database, so
the test sees exactly what a fresh clone does. Afterwards the database is read with
``sqlite3`` directly, and every process still mentioning the home is stopped by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Kept from the test process: its sandbox uid block, so parallel test workers never
# hand two live sandboxes the same host uid.
KEPT = ("BEARPIT_SANDBOX_UID_BASE", "BEARPIT_SANDBOX_UID_COUNT")


def pit_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEARPIT_") or k in KEPT}
    env.update(
        DJANGO_SETTINGS_MODULE="bearpit.settings",
        BEARPIT_HOME=str(home),
        BEARPIT_PLATFORM_PORT=str(free_port()),
        BEARPIT_CONCLUDE_GRACE_S="1",
        BEARPIT_TICK_SECONDS="0.5",
        BEARPIT_PROGRESS_EVERY_S="3",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def start_pit(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("wb")
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env=env,
        stdout=handle,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for_line(log: Path, needle: str, proc: subprocess.Popen[bytes], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(encoding="utf-8", errors="replace")
        if needle in text:
            return text
        if proc.poll() is not None:
            raise AssertionError(f"pit_up exited ({proc.returncode}) before {needle!r}:\n{text}")
        time.sleep(0.2)
    raise AssertionError(f"no {needle!r} within {timeout}s:\n{log.read_text()}")


def _pids_mentioning(text: str) -> Iterator[int]:
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            yield int(entry.name)


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def with_descendants(pids: list[int]) -> list[int]:
    seen: list[int] = []
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += _children(pid)
    return sorted(seen)


def leftover_pids(home: Path) -> list[int]:
    """Processes naming ``home`` on their command line, and everything they started."""
    return with_descendants(list(_pids_mentioning(str(home))))


def stop_everything(home: Path, *procs: subprocess.Popen[bytes] | None) -> None:
    """Kill the test's own ``pit`` processes that are still running, stop every process
    that still names the home (homeserver, sandboxes), then unmount the capped disks a
    killed run left mounted under it, so the test's folder can be removed."""
    for proc in procs:
        if proc is not None and proc.poll() is None:
            proc.kill()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = leftover_pids(home)
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        time.sleep(2.0)
    unmount_under(home)


def run_pit(home: Path, log: Path, *args: str, timeout: float = 240) -> tuple[int, str]:
    """Run one ``manage.py`` command on ``home`` to its end; its exit code and output."""
    proc = start_pit(list(args), pit_env(home), log)
    try:
        code = proc.wait(timeout=timeout)
    finally:
        stop_everything(home, proc)
    return code, log.read_text(encoding="utf-8", errors="replace")


def mounts_under(folder: Path) -> list[str]:
    """Mount points at or below ``folder``, deepest first (from /proc/self/mountinfo)."""
    root = str(folder.resolve())
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        # Field 5 is the mount point, with spaces and the like octal-escaped.
        point = line.split()[4].encode().decode("unicode_escape")
        if point == root or point.startswith(root + "/"):
            found.append(point)
    return sorted(found, key=len, reverse=True)


def unmount_under(folder: Path) -> None:
    for point in mounts_under(folder):
        subprocess.run(["umount", "-l", point], capture_output=True, check=False)


@dataclass
class Chronicle:
    events: list[tuple[int, str, dict[str, Any]]]
    messages: list[tuple[str, str, str]]
    realms: list[dict[str, Any]]

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [p for _id, k, p in self.events if k == kind]

    def lifecycle(self) -> list[str]:
        return [str(p.get("event")) for p in self.kinds("lifecycle")]


def read_chronicle(home: Path, realm_id: str | None = None) -> Chronicle:
    db = sqlite3.connect(home / "bearpit.sqlite3")
    try:
        where, args = ("WHERE realm_id = ?", (realm_id,)) if realm_id else ("", ())
        events = [
            (row[0], row[1], json.loads(row[2]))
            for row in db.execute(
                f"SELECT id, kind, payload FROM chronicle_event {where} ORDER BY id",  # noqa: S608
                args,
            )
        ]
        messages = list(
            db.execute(
                f"SELECT sender_agent, body, matrix_event_id FROM chronicle_message {where} "  # noqa: S608
                "ORDER BY id",
                args,
            )
        )
        cols = ["realm_id", "state", "outcome", "conclusion_reason"]
        realms = [
            dict(zip(cols, row, strict=True))
            for row in db.execute(f"SELECT {', '.join(cols)} FROM realms_realm")  # noqa: S608
        ]
    finally:
        db.close()
    return Chronicle(events, messages, realms)
