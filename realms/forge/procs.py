"""Host process facts from /proc: identity across restarts, trees, killing.

A sandbox is re-attached after a worker restart by its pid *and* the pid's start time
(clock ticks since boot), so a recycled pid is never mistaken for the sandbox.

Rows that a process holds (a key's reservations, a realm's tick or teardown claim, a
running job) name it the same way, ``host:pid:start``, so a process killed mid-work
(``kill -9``, a lost container) is known dead and its work taken over. A name of another
host is never judged from here: that process may be alive.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

PROC = Path("/proc")

_IDENTITY: tuple[int, str] | None = None


def start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot, or None if it is gone."""
    try:
        raw = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = raw.rsplit(")", 1)[1].split()
    return int(fields[19])


def state(pid: int) -> str | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw.rsplit(")", 1)[1].split()[0]


def parent(pid: int) -> int | None:
    try:
        raw = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return int(raw.rsplit(")", 1)[1].split()[1])


def is_same_process(pid: int | None, started: int | None) -> bool:
    """Whether ``pid`` is still the live process that started at ``started``."""
    if pid is None:
        return False
    current = start_time(pid)
    if current is None or (started is not None and current != started):
        return False
    return state(pid) not in (None, "Z", "X")


def identity() -> str:
    """This process as a row names it, ``host:pid:start`` (``?`` for an unreadable start).

    Computed once per process (a fork gets its own): the gateway names the holder of
    every reservation it makes.
    """
    global _IDENTITY
    pid = os.getpid()
    if _IDENTITY is None or _IDENTITY[0] != pid:
        started = start_time(pid)
        _IDENTITY = (pid, f"{socket.gethostname()}:{pid}:{'?' if started is None else started}")
    return _IDENTITY[1]


def identity_alive(name: str) -> bool | None:
    """Whether the process ``name`` (``host:pid[:start]``) still runs; None when it is not
    one of this host's. A name without a readable start is alive as long as its pid is."""
    host, _, rest = name.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return is_same_process(int(pid), int(started) if started.isdigit() else None)


def children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = list((PROC / str(pid) / "task").iterdir())
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return kids
    for task in tasks:
        try:
            text = (task / "children").read_text(encoding="utf-8")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        kids.extend(int(part) for part in text.split())
    return kids


def descendants(pid: int | None) -> list[int]:
    """All descendants of ``pid``, parents before children."""
    found: list[int] = []
    queue = children(pid) if pid is not None else []
    while queue:
        current = queue.pop(0)
        found.append(current)
        queue.extend(children(current))
    return found


def set_tree_niceness(pid: int, started: int | None, niceness: int) -> None:
    """Give the process and its descendants ``niceness`` (lowering it needs root);
    nothing happens if ``pid`` is no longer the process that ``started`` names."""
    if not is_same_process(pid, started):
        return
    for member in [pid, *descendants(pid)]:
        # Linux keeps a niceness per thread: every thread of each process is set.
        try:
            threads = [int(t.name) for t in Path(f"/proc/{member}/task").iterdir()]
        except OSError:
            threads = [member]
        for thread in threads:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, thread, niceness)


def signal_pid(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def wait_gone(pid: int, started: int | None, timeout: float) -> bool:
    """Wait until ``pid`` is gone (or a zombie); reap it if it is our child."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if not is_same_process(pid, started):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)


def uid_of(pid: int) -> int | None:
    try:
        return (PROC / str(pid)).stat().st_uid
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def cmdline(pid: int) -> list[str]:
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    return [part.decode("utf-8", "replace") for part in raw.split(b"\0") if part]


def all_pids() -> list[int]:
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def kill_tree(pid: int, started: int | None, grace: float, *, term_root: bool = True) -> None:
    """SIGTERM a process tree, wait ``grace`` seconds for its root to go, then SIGKILL
    what is left.

    ``term_root=False`` spares the root the SIGTERM: for a bwrap sandbox the root is
    bwrap itself, which would die at once and leave the sandbox running untracked;
    it exits by itself once the command inside has.
    """
    if not is_same_process(pid, started):
        return
    targets = descendants(pid)
    for target in [*targets, pid] if term_root else targets:
        signal_pid(target, signal.SIGTERM)
    if wait_gone(pid, started, grace):
        return
    for target in [*reversed(descendants(pid)), pid]:
        signal_pid(target, signal.SIGKILL)
    wait_gone(pid, started, 5.0)
