"""bubblewrap sandboxes: one per agent, as the agent's own unprivileged host uid.

Root runs bwrap without a user namespace (so the sandbox uid is a real host uid, which
RLIMIT_NPROC and file ownership apply to), bwrap keeps only the capabilities needed to
change uid, and ``setpriv`` inside drops to the agent's uid with no capabilities left.
The sandbox is not tied to the starting process: it outlives a worker restart and is
found again by pid and pid start time.

Open egress never means the host's network namespace: the sandbox runs in a namespace
of its own with outbound NAT and no way to the host (realms/forge/netns.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path
from threading import Event

from django.conf import settings

from realms.forge import layout, netns, uids
from realms.forge.backends import SandboxError, host
from realms.forge.spec import Egress, ExecResult, SandboxHandle, SandboxSpec, base_env

log = logging.getLogger(__name__)

_TOP_LEVEL = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC_FROM_HOST = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/alternatives",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/nsswitch.conf",
    "/etc/mime.types",
)
_SETPRIV = "/usr/bin/setpriv"


class BwrapBackend:
    name = "bwrap"
    # A start mostly waits for mkfs, mount and bwrap; a few at once keep 2 cores busy.
    concurrent_starts = 4

    def prepare(self, spec: SandboxSpec) -> None:
        if shutil.which("bwrap") is None:
            raise SandboxError("bwrap is not installed (Debian package: bubblewrap)")
        if os.geteuid() != 0:
            raise SandboxError(
                "the bwrap backend runs sandboxes as per-agent host uids and must be "
                "started as root; use BEARPIT_SANDBOX=process for development"
            )
        _check_home_hidden()
        host.prepare_dirs(spec, cap_disks=True)
        _write_etc(spec)
        if spec.egress == Egress.OPEN:
            if shutil.which("pasta") is None:
                raise SandboxError(
                    "network_egress open needs pasta (Debian package: passt) for a "
                    "network namespace of the sandbox's own"
                )
            try:
                netns.create(netns_path(spec))
            except netns.NetnsError as exc:
                raise SandboxError(f"open egress for {spec.agent_id}: {exc}") from None

    def start(self, spec: SandboxSpec) -> SandboxHandle:
        # bwrap keeps the uid's host-wide lease for as long as the sandbox runs.
        lease = uids.held_fd(spec.host_uid)
        if lease is None:
            raise SandboxError(f"agent {spec.agent_id}: uid {spec.host_uid} is not leased")
        command = bwrap_command(spec, spec.niced(spec.argv), exec_mode=False, sync_fd=lease)
        return host.start_detached(
            spec, command, spec.full_env(), ready_uid=spec.host_uid, pass_fds=[lease]
        )

    def alive(self, spec: SandboxSpec, handle: SandboxHandle) -> bool:
        return host.alive(handle)

    def stop(self, spec: SandboxSpec, handle: SandboxHandle, grace: float) -> None:
        host.stop(spec, handle, grace, term_root=False)

    def exec(
        self, spec: SandboxSpec, code: str, timeout: float, cancel: Event | None = None
    ) -> ExecResult:
        python = [sys.executable, "-I", "-u", "-"]
        command = bwrap_command(spec, python, exec_mode=True)
        return host.run_captured(
            spec, command, base_env(), code.encode("utf-8"), timeout, cancel=cancel
        )

    def logs(self, spec: SandboxSpec, handle: SandboxHandle) -> str:
        return host.read_log(spec.log_path)

    def release(self, spec: SandboxSpec) -> None:
        host.release_agent(spec)
        netns.destroy(netns_path(spec))


def netns_path(spec: SandboxSpec) -> Path:
    return netns.path_for(layout.install_tag(), spec.realm_id, spec.agent_id)


def _read_only_paths() -> list[Path]:
    """The interpreter, the virtual environment and the runtime package, at their
    host paths, so the venv's absolute paths keep working inside."""
    paths = [
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix),
        Path(settings.BASE_DIR) / "runtime",
    ]
    unique: list[Path] = []
    for path in paths:
        if path.is_relative_to("/usr") or path in unique:
            continue
        unique.append(path)
    return unique


def _check_home_hidden() -> None:
    home = layout.home_root().resolve()
    for path in _read_only_paths():
        if home.is_relative_to(path.resolve()):
            raise SandboxError(
                f"BEARPIT_HOME ({home}) lies inside {path}, which sandboxes see; "
                "move BEARPIT_HOME elsewhere"
            )


def _write_etc(spec: SandboxSpec) -> None:
    etc = layout.etc_dir(spec.realm_id, spec.agent_id)
    etc.mkdir(parents=True, exist_ok=True)
    uid, gid = spec.host_uid, spec.host_gid
    files = {
        "passwd": (
            "root:x:0:0:root:/root:/usr/sbin/nologin\n"
            f"agent:x:{uid}:{gid}:agent:{layout.SANDBOX_HOME}:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
        ),
        "group": f"root:x:0:\nrealm:x:{gid}:\nnogroup:x:65534:\n",
        "hosts": "127.0.0.1 localhost agent\n::1 localhost\n",
        "hostname": "agent\n",
    }
    for name, text in files.items():
        (etc / name).write_text(text, encoding="utf-8")
        (etc / name).chmod(0o644)  # read by the agent's uid inside


def bwrap_command(
    spec: SandboxSpec, inner: list[str], *, exec_mode: bool, sync_fd: int | None = None
) -> list[str]:
    """The bwrap argv; ``exec_mode`` is run_code's view: no sockets, no network, the
    birth config hidden under an empty tmpfs, and dying with its caller. Open egress
    starts bwrap inside the sandbox's own network namespace (``nsenter`` execs it).
    ``sync_fd`` stays open in bwrap, and only there, while the sandbox runs."""
    args = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    if exec_mode or spec.egress != Egress.OPEN:
        args.append("--unshare-net")
    else:
        args = ["nsenter", f"--net={netns_path(spec)}", *args]
    args += ["--hostname", "agent", "--new-session"]
    if exec_mode:
        args.append("--die-with-parent")
    if sync_fd is not None:
        args += ["--sync-fd", str(sync_fd)]
    args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in _TOP_LEVEL:
        path = Path(top)
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), top]
        elif path.is_dir():
            args += ["--ro-bind", top, top]
    # bwrap would create missing parents as 0700 root-owned, which the agent's uid
    # cannot traverse. They must be listable too (Python's importer lists sys.path
    # entries such as the project root); they hold nothing but the binds below.
    # The private /tmp comes before the code binds: a project or virtual environment that
    # lives under the host's /tmp is bound on top of it instead of hidden by it.
    args += ["--size", str(spec.limits.disk_bytes), "--tmpfs", layout.SANDBOX_TMP]
    made: set[str] = {layout.SANDBOX_TMP}
    for dest in [*(str(p) for p in _read_only_paths()), layout.SANDBOX_HOME, layout.SANDBOX_SHARED]:
        for parent in reversed(Path(dest).parents[:-1]):
            if str(parent) not in made and not str(parent).startswith("/usr"):
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
    for path in _read_only_paths():
        args += ["--ro-bind", str(path), str(path)]
    args += ["--proc", "/proc", "--dev", "/dev"]
    args += ["--tmpfs", "/run"]
    if not exec_mode:
        args += ["--ro-bind", str(spec.sockets), layout.SANDBOX_SOCKETS]
    # Made before its binds, or bwrap creates /etc as a 0700 root directory and the
    # agent's uid can read none of them (git, for one, then fails on /etc/gitconfig).
    args += ["--perms", "0755", "--dir", "/etc"]
    etc = layout.etc_dir(spec.realm_id, spec.agent_id)
    for name in ("passwd", "group", "hosts", "hostname"):
        args += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    etc_host = list(_ETC_FROM_HOST)
    if spec.egress == Egress.OPEN and not exec_mode:
        etc_host.append("/etc/resolv.conf")
    for item in etc_host:
        args += ["--ro-bind-try", item, item]
    args += ["--bind", str(spec.home), layout.SANDBOX_HOME]
    if exec_mode:
        args += ["--tmpfs", f"{layout.SANDBOX_HOME}/{layout.BIRTH_DIR_NAME}"]
    if spec.shared is not None:
        args += ["--bind", str(spec.shared), layout.SANDBOX_SHARED]
    args += ["--chdir", layout.SANDBOX_HOME, "--"]
    args += [
        _SETPRIV,
        f"--reuid={spec.host_uid}",
        f"--regid={spec.host_gid}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
        # umask 007: files in the shared folder stay writable by the realm's group.
        "/bin/sh", "-c", 'umask 007; exec "$@"', "sh",
        *inner,
    ]  # fmt: skip
    return args
