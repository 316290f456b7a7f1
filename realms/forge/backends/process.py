"""Plain processes: for development on machines without bubblewrap. NO isolation.

The agent runs as the platform's own user with the platform's filesystem in view;
only the environment is cleaned. Every start says so loudly.
"""

from __future__ import annotations

import logging
import sys
from threading import Event

from realms.forge import layout
from realms.forge.backends import host
from realms.forge.spec import ExecResult, SandboxHandle, SandboxSpec, base_env

log = logging.getLogger(__name__)


class ProcessBackend:
    name = "process"
    # A start is a fork and a wait for the child to run; a few at once overlap the waits.
    concurrent_starts = 4

    def prepare(self, spec: SandboxSpec) -> None:
        host.prepare_dirs(spec, cap_disks=False)

    def start(self, spec: SandboxSpec) -> SandboxHandle:
        log.warning(
            "SANDBOX BACKEND 'process' HAS NO ISOLATION: agent %s/%s runs unconfined as "
            "this host user; use BEARPIT_SANDBOX=bwrap or docker for anything but development",
            spec.realm_id,
            spec.agent_id,
        )
        argv = [self._host_path(spec, part) for part in spec.argv]
        env = {**spec.full_env(), "HOME": str(spec.home), "BEARPIT_SOCKETS": str(spec.sockets)}
        command = ["/bin/sh", "-c", f'cd "{spec.home}" && exec "$@"', "sh", *spec.niced(argv)]
        return host.start_detached(spec, command, env, ready_uid=None)

    def alive(self, spec: SandboxSpec, handle: SandboxHandle) -> bool:
        return host.alive(handle)

    def stop(self, spec: SandboxSpec, handle: SandboxHandle, grace: float) -> None:
        host.stop(spec, handle, grace)

    def exec(
        self, spec: SandboxSpec, code: str, timeout: float, cancel: Event | None = None
    ) -> ExecResult:
        env = {**base_env(str(spec.home)), "BEARPIT_SOCKETS": ""}
        command = ["/bin/sh", "-c", f'cd "{spec.home}" && exec "$@"', "sh"]
        command += [sys.executable, "-I", "-u", "-"]
        return host.run_captured(spec, command, env, code.encode("utf-8"), timeout, cancel=cancel)

    def logs(self, spec: SandboxSpec, handle: SandboxHandle) -> str:
        return host.read_log(spec.log_path)

    def release(self, spec: SandboxSpec) -> None:
        host.release_agent(spec)

    @staticmethod
    def _host_path(spec: SandboxSpec, part: str) -> str:
        """Sandbox paths in the runtime command, translated to where they are on the host."""
        for inside, outside in (
            (layout.SANDBOX_HOME, spec.home),
            (layout.SANDBOX_SOCKETS, spec.sockets),
            (layout.SANDBOX_SHARED, spec.shared),
        ):
            if outside is not None and (part == inside or part.startswith(inside + "/")):
                return str(outside) + part[len(inside) :]
        return part
