"""What a sandbox is asked to be, what identifies a running one, and what an exec returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from django.conf import settings

from realms.forge import layout

MIB = 1024 * 1024


class Egress(StrEnum):
    """``spec.environment.network_egress``; ``allowlist`` is refused by validation."""

    NONE = "none"
    MODEL_ONLY = "model_only"
    OPEN = "open"


@dataclass(frozen=True)
class Limits:
    memory_bytes: int
    cpus: float
    max_processes: int
    disk_bytes: int
    shared_disk_bytes: int

    @classmethod
    def from_settings(cls) -> Limits:
        return cls(
            memory_bytes=settings.BEARPIT_SANDBOX_MEMORY_MB * MIB,
            cpus=settings.BEARPIT_SANDBOX_CPUS,
            max_processes=settings.BEARPIT_SANDBOX_PIDS,
            disk_bytes=settings.BEARPIT_SANDBOX_DISK_MB * MIB,
            shared_disk_bytes=settings.BEARPIT_SANDBOX_SHARED_DISK_MB * MIB,
        )


def _runtime_argv() -> tuple[str, ...]:
    from realms.forge.command import runtime_argv

    return tuple(runtime_argv())


def base_env(home: str = layout.SANDBOX_HOME) -> dict[str, str]:
    """The whole environment a sandboxed process starts with: nothing from the host."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "USER": "agent",
        "LOGNAME": "agent",
        "LANG": "C.UTF-8",
        "TMPDIR": layout.SANDBOX_TMP,
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "BEARPIT_SOCKETS": layout.SANDBOX_SOCKETS,
    }


@dataclass(frozen=True)
class SandboxSpec:
    """Everything a backend needs to start one agent's sandbox."""

    realm_id: str
    agent_id: str
    host_uid: int
    host_gid: int
    home: Path
    shared: Path | None
    sockets: Path
    log_path: Path
    limits: Limits
    egress: Egress = Egress.MODEL_ONLY
    argv: tuple[str, ...] = field(default_factory=_runtime_argv)
    env: Mapping[str, str] = field(default_factory=dict)
    #: The niceness the sandbox starts with (process-based backends). A runtime that
    #: waits for its birth config starts low, so the platform building the bus meanwhile
    #: is not slowed by fifty interpreters loading their code; the birth raises it to 0.
    start_niceness: int = 0

    def niced(self, argv: Sequence[str]) -> list[str]:
        """``argv`` run at ``start_niceness``. Backends put it after their own set-up
        (bwrap, setpriv), which must not wait behind other sandboxes' runtimes."""
        if not self.start_niceness:
            return list(argv)
        return ["/usr/bin/nice", "-n", str(self.start_niceness), *argv]

    def full_env(self) -> dict[str, str]:
        return {**base_env(), **self.env}


@dataclass(frozen=True)
class SandboxHandle:
    """Identifies a running sandbox across worker restarts."""

    pid: int | None = None
    start_time: int | None = None
    ref: str = ""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int | None
    output: str
    timed_out: bool
