"""Host-wide leases of sandbox uids, so two installations on one host never run agents
as the same uid at once (RLIMIT_NPROC, file ownership and signals are per uid, host-wide).

A lease is an flock on ``/run/bearpit/uids/<uid>.lock``, outside any BEARPIT_HOME. The
allocating process takes it, and a bwrap sandbox is started holding it too (bwrap's
``--sync-fd``, kept by bwrap itself, out of the agent's reach), so the lease lasts as
long as the sandbox and ends with it: a dead holder, worker or sandbox, releases it by
dying. On top of that a uid that owns any process on the host is never handed out,
whoever started that process (a container, a sandbox of an older installation).

The platform must not import Django here: a test plays another installation with it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
from pathlib import Path

LEASE_DIR = Path("/run/bearpit/uids")

# Leases this process holds until their sandbox holds them: uid -> locked fd.
_held: dict[int, int] = {}
_held_lock = threading.Lock()


def lease_dir() -> Path:
    """``/run/bearpit/uids`` for root; an unprivileged platform (the process backend,
    whose sandboxes all run as its own uid) keeps its leases in its own temp dir."""
    if os.geteuid() == 0:
        return LEASE_DIR
    return Path(tempfile.gettempdir()) / f"bearpit-uids-{os.geteuid()}"


def _ensure_dir() -> Path:
    path = lease_dir()
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.is_symlink() or path.stat().st_uid != os.geteuid():
        raise PermissionError(f"{path}: not a directory of this user; refusing its leases")
    path.chmod(0o700)
    return path


def owns_processes(uid: int) -> bool:
    """Whether any process on the host runs with ``uid`` as any of its uids, or as any
    of its gids: a realm's gid is its first agent's uid, and the rest of the realm keeps
    running with it after that agent (and its lease) is gone."""
    wanted = str(uid)
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status", encoding="utf-8") as status:
                for line in status:
                    if line.startswith(("Uid:", "Gid:")) and wanted in line.split()[1:]:
                        return True
                    if line.startswith("Gid:"):
                        break
        except OSError:
            continue
    return False


def try_lease(uid: int) -> bool:
    """Take the host-wide lease of ``uid``; False if another holder has it or the uid
    owns processes. A taken lease stays with this process until :func:`drop`."""
    path = _ensure_dir() / f"{uid}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    if owns_processes(uid):
        os.close(fd)
        return False
    with _held_lock:
        previous = _held.pop(uid, None)
        _held[uid] = fd
    if previous is not None:
        os.close(previous)
    return True


def held_fd(uid: int) -> int | None:
    """The locked fd of a lease this process holds, for a sandbox to inherit."""
    with _held_lock:
        return _held.get(uid)


def drop(uid: int) -> None:
    """Let go of this process's hold; the lease ends unless a sandbox holds it too."""
    with _held_lock:
        fd = _held.pop(uid, None)
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
