"""Start-up checks for the commands that start the embedded platform.

Every prerequisite is checked before anything is created (no database, no realm, no
sandbox), and each problem is answered with one line that names the fix. The
commands turn a :class:`PreflightError` into that line and exit code 1.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
from pathlib import Path

from django.conf import settings

from ledger.local_server import LocalServerConfig, LocalServerError, check_config
from realms.embedded.platform import EmbeddedPlatform, serves_local_model
from realms.herald.config import HomeserverConfig
from realms.herald.homeserver import HomeserverError, running_homeserver

_SETPRIV = Path("/usr/bin/setpriv")
_SMOKE_TIMEOUT_S = 20.0
_FOR_DEVELOPMENT = "or set BEARPIT_SANDBOX=process for development"


class PreflightError(Exception):
    """A prerequisite is missing; the message is one line that names the fix."""


def check_embedded_platform(provider: str | None = None) -> None:
    """Everything ``EmbeddedPlatform.start()`` and the realm's sandboxes will need."""
    check_sandbox_backend()
    if serves_local_model(provider):
        try:
            check_config(LocalServerConfig.from_settings())
        except LocalServerError as exc:
            raise PreflightError(str(exc)) from exc
    if settings.BEARPIT_MATRIX_URL is None:
        check_port_free(
            settings.BEARPIT_PLATFORM_PORT,
            "BEARPIT_PLATFORM_PORT",
            "the platform needs it for the homeserver's pushes",
        )
        config = HomeserverConfig.from_settings()
        if config.port and running_homeserver(config) is None:
            check_port_free(config.port, "BEARPIT_MATRIX_PORT", "the homeserver needs it")


def start_embedded_platform(platform: EmbeddedPlatform) -> EmbeddedPlatform:
    """Check, then start; a start that fails (the homeserver, a port taken meanwhile)
    is answered the same way, with what was started already stopped again."""
    check_embedded_platform(platform.provider)
    try:
        return platform.start()
    except HomeserverError as exc:
        raise PreflightError(exc.summary) from exc
    except RuntimeError as exc:
        # The servers' start errors are one sentence already (a port, a socket path).
        raise PreflightError(str(exc).splitlines()[0]) from exc


def check_sandbox_backend() -> None:
    if settings.BEARPIT_SANDBOX == "bwrap":
        check_bwrap()


def check_bwrap() -> None:
    """bubblewrap installed, run as root, and able to start a sandbox here."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise PreflightError(
            "bubblewrap is not installed: install the Debian package bubblewrap "
            f"(apt-get install bubblewrap), {_FOR_DEVELOPMENT}"
        )
    if os.geteuid() != 0:
        raise PreflightError(
            "the bwrap sandbox backend runs each agent as its own host uid and needs root: "
            f"run this command as root, {_FOR_DEVELOPMENT}"
        )
    if not _SETPRIV.exists():
        raise PreflightError(
            f"{_SETPRIV} is missing (sandboxes drop to the agent's uid with it): "
            "install the Debian package util-linux"
        )
    _smoke_run(bwrap)


def _smoke_run(bwrap: str) -> None:
    """A throw-away sandbox with the namespaces and the uid drop the backend uses: a
    host that forbids them (a container without the privilege) fails here, not later."""
    command = [
        bwrap, "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try",
        "--unshare-net", "--new-session", "--die-with-parent",
        "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
        "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/run", "--",
        str(_SETPRIV), "--reuid=65534", "--regid=65534", "--clear-groups",
        "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--", "/bin/true",
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_SMOKE_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise PreflightError(
            f"bubblewrap did not start a test sandbox within {_SMOKE_TIMEOUT_S:.0f} s: "
            f"check that {bwrap} works on this host, {_FOR_DEVELOPMENT}"
        ) from None
    except OSError as exc:
        raise PreflightError(
            f"bubblewrap ({bwrap}) cannot be run: {exc.strerror}; reinstall the Debian "
            f"package bubblewrap, {_FOR_DEVELOPMENT}"
        ) from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        said = lines[-1] if lines else f"exit status {done.returncode}"
        raise PreflightError(
            f"bubblewrap cannot start a sandbox on this host ({said}): run on a host or "
            f"container that allows new namespaces with root's capabilities, {_FOR_DEVELOPMENT}"
        )


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def check_port_free(port: int, setting: str, why: str) -> None:
    if port_in_use(port):
        raise PreflightError(
            f"port {port} on 127.0.0.1 is already in use ({why}): stop what listens there, "
            f"or set {setting} to a free port"
        )
