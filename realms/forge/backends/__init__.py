"""Sandbox backends: one contract, chosen by ``settings.BEARPIT_SANDBOX``."""

from __future__ import annotations

from threading import Event
from typing import Protocol

from django.conf import settings

from realms.forge.spec import ExecResult, SandboxHandle, SandboxSpec


class SandboxError(RuntimeError):
    """A sandbox could not be started, stopped or reached; says why."""


class SandboxBackend(Protocol):
    name: str
    #: How many sandboxes of one realm may be prepared and started at the same time.
    concurrent_starts: int

    def prepare(self, spec: SandboxSpec) -> None:
        """Create the on-disk parts (capped home, shared folder, /etc files)."""

    def start(self, spec: SandboxSpec) -> SandboxHandle:
        """Start the runtime detached, so it outlives the calling process."""

    def alive(self, spec: SandboxSpec, handle: SandboxHandle) -> bool: ...

    def stop(self, spec: SandboxSpec, handle: SandboxHandle, grace: float) -> None:
        """Stop the sandbox and every process in it; harmless when already stopped."""

    def exec(
        self, spec: SandboxSpec, code: str, timeout: float, cancel: Event | None = None
    ) -> ExecResult:
        """Run Python ``code`` in a fresh process with the agent's view, caps and no
        network, unable to read the birth config or see the runtime's processes.
        Setting ``cancel`` kills it as the timeout would (a background job's kill)."""

    def logs(self, spec: SandboxSpec, handle: SandboxHandle) -> str:
        """The sandbox's output so far."""

    def release(self, spec: SandboxSpec) -> None:
        """Free host resources (mounts, cgroups) once the sandbox is stopped."""


def get_backend(name: str | None = None) -> SandboxBackend:
    chosen = name or settings.BEARPIT_SANDBOX
    if chosen == "bwrap":
        from realms.forge.backends.bwrap import BwrapBackend

        return BwrapBackend()
    if chosen == "process":
        from realms.forge.backends.process import ProcessBackend

        return ProcessBackend()
    if chosen == "docker":
        from realms.forge.backends.docker import DockerBackend

        return DockerBackend()
    raise SandboxError(f"BEARPIT_SANDBOX: unknown backend {chosen!r}")
