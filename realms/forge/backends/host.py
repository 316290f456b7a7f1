"""Host-side parts shared by the process-based backends: the launch chain, the
per-agent caps, the capped directories and the bookkeeping of our own children."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from realms.forge import cgroups, layout, procs, quota
from realms.forge.backends import SandboxError
from realms.forge.spec import ExecResult, SandboxHandle, SandboxSpec

#: Joins the cgroups named before ``--`` and execs the rest, so the sandbox is capped
#: from its first instruction (a Popen-then-join would let a fast fork escape).
_JOIN = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 111; shift; done; shift; exec "$@"'
LOG_TAIL_CHARS = 4000
OUTPUT_KEEP_BYTES = 256 * 1024

# Popen objects of sandboxes this process started, so they are reaped, not left zombies.
_children: dict[int, subprocess.Popen[bytes]] = {}
_children_lock = threading.Lock()


def agent_cgroups(spec: SandboxSpec) -> cgroups.AgentCgroups | None:
    if not cgroups.available():
        return None
    return cgroups.AgentCgroups(layout.install_tag(), spec.realm_id, spec.agent_id)


def rlimit_args(spec: SandboxSpec, *, memory_by_cgroup: bool) -> list[str]:
    """prlimit options. RLIMIT_NPROC holds because the sandbox runs as its own
    unprivileged uid; RLIMIT_AS stands in for the memory cgroup when there is none."""
    lim = spec.limits
    args = [
        f"--nproc={lim.max_processes}:{lim.max_processes}",
        f"--fsize={lim.disk_bytes}:{lim.disk_bytes}",
        "--core=0:0",
        "--nofile=4096:4096",
    ]
    if not memory_by_cgroup:
        args.append(f"--as={lim.memory_bytes}:{lim.memory_bytes}")
    return args


def prepare_dirs(spec: SandboxSpec, *, cap_disks: bool, with_cgroups: bool = True) -> None:
    """The capped private home, the shared folder, the log directory and the cgroups.

    The realm's directories are the platform's alone (0700); the sockets directory is
    the one every sandbox's uid must traverse (0755; it holds only sockets and the
    shared bytecode cache)."""
    home = spec.home
    for path in (layout.realm_dir(spec.realm_id), home.parent, layout.logs_dir(spec.realm_id)):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.chmod(0o700)
    spec.sockets.mkdir(parents=True, exist_ok=True)
    spec.sockets.chmod(0o755)
    # Earlier versions kept trace locks, named for every realm and agent, in there.
    legacy_locks = spec.sockets / "locks"
    if legacy_locks.is_dir() and not legacy_locks.is_symlink():
        shutil.rmtree(legacy_locks, ignore_errors=True)
    if cap_disks:
        quota.mount_capped(
            home.parent / "home.img", home, spec.limits.disk_bytes,
            spec.host_uid, spec.host_gid, 0o700,
        )  # fmt: skip
        if spec.shared is not None:
            # setgid + group-writable: every agent of the realm shares the realm's gid.
            quota.mount_capped(
                spec.shared.parent / "shared.img", spec.shared, spec.limits.shared_disk_bytes,
                0, spec.host_gid, 0o2770,
            )  # fmt: skip
    else:
        home.mkdir(parents=True, exist_ok=True)
        if spec.shared is not None:
            spec.shared.mkdir(parents=True, exist_ok=True)
    groups = agent_cgroups(spec) if with_cgroups else None
    if groups is not None:
        groups.create(spec.limits)


def release_agent(spec: SandboxSpec) -> None:
    quota.unmount(spec.home)
    groups = agent_cgroups(spec)
    if groups is not None:
        groups.remove()


def launch(
    spec: SandboxSpec,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    stdout: int,
    stdin: int = subprocess.DEVNULL,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen[bytes]:
    """Start ``command`` in a new session, inside the agent's cgroups and rlimits;
    ``pass_fds`` are the only descriptors it inherits."""
    groups = agent_cgroups(spec)
    join = [str(p) for p in groups.procs_files()] if groups is not None else []
    argv = [
        "/bin/sh", "-c", _JOIN, "sh", *join, "--",
        "prlimit", *rlimit_args(spec, memory_by_cgroup=groups is not None), "--",
        *command,
    ]  # fmt: skip
    return subprocess.Popen(
        argv,
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        env=dict(env),
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
    )


def start_detached(
    spec: SandboxSpec,
    command: Sequence[str],
    env: Mapping[str, str],
    *,
    ready_uid: int | None,
    pass_fds: Sequence[int] = (),
) -> SandboxHandle:
    """Launch the sandbox with output appended to its log; wait until it runs.

    Ready means a process of the tree runs as ``ready_uid`` (setup finished and
    privileges dropped); a chain that exits first is a failure whose log tail says why.
    """
    spec.log_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    offset = spec.log_path.stat().st_size if spec.log_path.exists() else 0
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    log_fd = os.open(spec.log_path, flags, 0o600)
    try:
        os.fchmod(log_fd, 0o600)
        proc = launch(spec, command, env, stdout=log_fd, pass_fds=pass_fds)
    finally:
        os.close(log_fd)
    started = procs.start_time(proc.pid)
    with _children_lock:
        _children[proc.pid] = proc
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            forget(proc.pid)
            tail = read_log(spec.log_path, offset)[-LOG_TAIL_CHARS:].strip()
            raise SandboxError(
                f"sandbox for {spec.realm_id}/{spec.agent_id} exited at start "
                f"(code {proc.returncode}): {tail or 'no output'}"
            )
        if ready_uid is None or any(
            procs.uid_of(pid) == ready_uid for pid in procs.descendants(proc.pid)
        ):
            return SandboxHandle(pid=proc.pid, start_time=started)
        time.sleep(0.01)
    procs.kill_tree(proc.pid, started, 0)
    forget(proc.pid)
    raise SandboxError(f"sandbox for {spec.realm_id}/{spec.agent_id} did not start in 10 s")


def forget(pid: int) -> None:
    with _children_lock:
        proc = _children.pop(pid, None)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)


def alive(handle: SandboxHandle) -> bool:
    if handle.pid is None:
        return False
    with _children_lock:
        proc = _children.get(handle.pid)
    if proc is not None and proc.poll() is not None:
        forget(handle.pid)
        return False
    return procs.is_same_process(handle.pid, handle.start_time)


def stop(spec: SandboxSpec, handle: SandboxHandle, grace: float, *, term_root: bool = True) -> None:
    if handle.pid is not None:
        procs.kill_tree(handle.pid, handle.start_time, grace, term_root=term_root)
        forget(handle.pid)
    # Anything that left the tree (a daemonised child, an in-flight run_code) is still
    # in the agent's cgroup: sweep it.
    groups = agent_cgroups(spec)
    if groups is None:
        return
    for _sweep in range(20):
        left = groups.pids()
        if not left:
            return
        for pid in left:
            procs.signal_pid(pid, signal.SIGKILL)
        time.sleep(0.05)


def read_log(path: Path, offset: int = 0) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def run_captured(
    spec: SandboxSpec, command: Sequence[str], env: Mapping[str, str], stdin_data: bytes,
    timeout: float, *, cancel: threading.Event | None = None,
) -> ExecResult:  # fmt: skip
    """Run to completion or ``timeout``; stdout and stderr merged; the whole process
    tree is killed at the limit, or as soon as ``cancel`` is set. Only the first part of
    a flood of output is kept."""
    proc = launch(spec, command, env, stdout=subprocess.PIPE, stdin=subprocess.PIPE)
    started = procs.start_time(proc.pid)
    chunks: list[bytes] = []
    kept = 0

    def drain() -> None:
        nonlocal kept
        assert proc.stdout is not None
        while data := os.read(proc.stdout.fileno(), 65536):
            if kept < OUTPUT_KEEP_BYTES:
                chunks.append(data)
                kept += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(stdin_data)
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    timed_out = False
    try:
        _wait(proc, timeout, cancel)
    except subprocess.TimeoutExpired:
        timed_out = True
        procs.kill_tree(proc.pid, started, 0)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(timeout=10)
    reader.join(timeout=5)
    output = b"".join(chunks).decode("utf-8", "replace")
    return ExecResult(
        exit_code=None if timed_out else proc.returncode, output=output, timed_out=timed_out
    )


def _wait(proc: subprocess.Popen[bytes], timeout: float, cancel: threading.Event | None) -> None:
    """Wait for ``proc``; ``TimeoutExpired`` at ``timeout`` or once ``cancel`` is set."""
    if cancel is None:
        proc.wait(timeout=timeout)
        return
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if cancel.is_set() or left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        try:
            proc.wait(timeout=min(0.2, left))
            return
        except subprocess.TimeoutExpired:
            continue
