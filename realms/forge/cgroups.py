"""Per-agent cgroups v1 (memory, pids, cpu) where the hierarchy is writable.

Layout: ``/sys/fs/cgroup/<controller>/<install tag>/<realm>/<agent>``. A process joins
by writing its own pid to ``cgroup.procs`` before it execs into the sandbox, so every
process of the sandbox, run_code's included, is counted against the same caps.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path

from realms.forge.spec import Limits

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


def available() -> bool:
    """Whether every controller we need is a writable v1 hierarchy."""
    return all(
        (CGROUP_ROOT / ctrl / "cgroup.procs").exists() and os.access(CGROUP_ROOT / ctrl, os.W_OK)
        for ctrl in CONTROLLERS
    )


class AgentCgroups:
    def __init__(self, tag: str, realm_id: str, agent_id: str) -> None:
        self.relative = Path(tag) / realm_id / agent_id
        self.tag = tag

    def path(self, controller: str) -> Path:
        return CGROUP_ROOT / controller / self.relative

    def procs_files(self) -> list[Path]:
        return [self.path(ctrl) / "cgroup.procs" for ctrl in CONTROLLERS]

    def create(self, limits: Limits) -> None:
        for ctrl in CONTROLLERS:
            self.path(ctrl).mkdir(parents=True, exist_ok=True)
        memory = self.path("memory")
        _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        # Without this, swap would let a hog run past the cap on hosts that have swap.
        swap = memory / "memory.memsw.limit_in_bytes"
        if swap.exists():
            with contextlib.suppress(OSError):
                _write(swap, str(limits.memory_bytes))
        _write(self.path("pids") / "pids.max", str(limits.max_processes))
        cpu = self.path("cpu")
        _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * CPU_PERIOD_US))))
        _write(cpu / "cpu.shares", str(max(2, int(limits.cpus * 1024))))

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files():
            with contextlib.suppress(OSError):
                found.update(int(x) for x in procs.read_text().split())
        return sorted(found)

    def remove(self, timeout: float = 5.0) -> None:
        """Remove the agent's cgroups once empty; the realm/tag levels too when empty."""
        deadline = time.monotonic() + timeout
        for ctrl in CONTROLLERS:
            leaf = self.path(ctrl)
            while leaf.exists():
                try:
                    leaf.rmdir()
                except OSError:
                    if time.monotonic() >= deadline:
                        log.warning("cgroup %s is still busy; left in place", leaf)
                        break
                    time.sleep(0.05)
            for parent in (leaf.parent, leaf.parent.parent):
                with contextlib.suppress(OSError):
                    parent.rmdir()


def _write(path: Path, value: str) -> None:
    path.write_text(value, encoding="ascii")
