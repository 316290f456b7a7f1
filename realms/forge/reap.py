"""Reaping: sandboxes, sandbox processes and mounts that no live realm owns."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from realms.forge import cgroups, layout, netns, procs, quota
from realms.forge.models import Sandbox
from realms.forge.services import finish_stop, stop_agent_sandbox
from realms.models import Realm

log = logging.getLogger(__name__)


def _live_realms() -> set[str]:
    return set(
        Realm.objects.exclude(state__in=Realm.TERMINAL_STATES).values_list("realm_id", flat=True)
    )


def _sandbox_home_of(cmd: list[str]) -> tuple[str, str] | None:
    """(realm, agent) of a detached bwrap sandbox of this installation, from its argv."""
    if not cmd or not cmd[0].endswith("bwrap") or "--die-with-parent" in cmd:
        return None
    prefix = str(layout.realms_root()) + "/"
    for index, arg in enumerate(cmd[:-2]):
        if arg == "--bind" and cmd[index + 2] == layout.SANDBOX_HOME:
            source = cmd[index + 1]
            if source.startswith(prefix):
                parts = source[len(prefix) :].split("/")
                if len(parts) == 4 and parts[1] == "agents" and parts[3] == "home":
                    return parts[0], parts[2]
    return None


def reap(
    dry_run: bool = False, *, force: bool = False, host_id: str | None = None
) -> list[dict[str, Any]]:
    """Find (and unless ``dry_run``, remove) what no live realm owns:

    * sandbox rows still live whose realm is gone or finished (stopped);
    * bwrap sandbox processes of this installation no live row accounts for (killed);
    * containers of this installation no live row accounts for (removed);
    * capped home / shared mounts of realms with no live sandbox (unmounted);
    * open-egress network namespaces (and their pasta) of such realms (removed).

    ``force`` counts no realm as live, whatever its row says: for a realm left
    ``running`` by a process that is gone, whose sandboxes nothing will stop.
    ``host_id``: only the sandbox rows of realms placed on that worker host (the rest
    are other hosts' to stop); the processes and mounts are this installation's anyway.
    """
    found: list[dict[str, Any]] = []
    live_realms = set() if force else _live_realms()
    rows = Sandbox.objects.filter(state__in=Sandbox.LIVE_STATES).exclude(realm_id__in=live_realms)
    if host_id is not None:
        rows = rows.filter(realm_id__in=Realm.objects.filter(host_id=host_id).values("realm_id"))
    for row in rows:
        found.append({"kind": "sandbox", "realm": row.realm_id, "agent": row.agent_id})
        if not dry_run:
            if row.state == Sandbox.State.STOPPING:
                finish_stop(row)  # its stopper died half-way
            else:
                stop_agent_sandbox(row.realm_id, row.agent_id, "reaped: no live realm")

    live_rows = list(Sandbox.objects.filter(state__in=Sandbox.LIVE_STATES))
    live_pids = {row.pid for row in live_rows if row.pid}
    candidates = {}
    for pid in procs.all_pids():
        owner = _sandbox_home_of(procs.cmdline(pid))
        if owner is not None:
            candidates[pid] = owner
    # bwrap forks its pid-namespace init with the same argv: only the outer process of
    # each sandbox counts, and killing it takes the whole tree. Chosen before any kill,
    # so an init whose parent was just killed is not counted as a sandbox of its own.
    outer = {
        pid: owner
        for pid, owner in sorted(candidates.items())
        if pid not in live_pids and procs.parent(pid) not in candidates
    }
    for pid, owner in outer.items():
        found.append({"kind": "process", "pid": pid, "realm": owner[0], "agent": owner[1]})
        if not dry_run:
            procs.kill_tree(pid, procs.start_time(pid), 1.0)

    if settings.BEARPIT_SANDBOX == "docker":
        from realms.forge.backends.docker import DockerBackend

        docker = DockerBackend()
        for name in docker.orphans({(r.realm_id, r.agent_id) for r in live_rows}):
            found.append({"kind": "container", "name": name})
            if not dry_run:
                docker.remove_container(name)
        for name in docker.orphan_networks({r.realm_id for r in live_rows}):
            found.append({"kind": "network", "name": name})
            if not dry_run:
                docker.remove_network(name)

    busy_realms = {row.realm_id for row in live_rows}
    for target in _mounts_under(str(layout.realms_root()) + "/"):
        realm_id = target[len(str(layout.realms_root())) + 1 :].split("/", 1)[0]
        if realm_id in busy_realms:
            continue
        found.append({"kind": "mount", "path": target, "realm": realm_id})
        if not dry_run:
            quota.unmount(layout.realms_root() / target[len(str(layout.realms_root())) + 1 :])
    for namespace, realm_id in netns.orphans(layout.install_tag(), busy_realms):
        found.append({"kind": "netns", "path": str(namespace), "realm": realm_id})
        if not dry_run:
            netns.destroy(namespace)
    for group in _stale_cgroups(busy_realms):
        found.append({"kind": "cgroup", "path": str(group)})
        if not dry_run:
            with contextlib.suppress(OSError):
                group.rmdir()
    return found


def _stale_cgroups(busy_realms: set[str]) -> list[Path]:
    """Empty per-agent and per-realm cgroups of this installation's finished realms."""
    stale: list[Path] = []
    for ctrl in cgroups.CONTROLLERS:
        tag_dir = cgroups.CGROUP_ROOT / ctrl / layout.install_tag()
        if not tag_dir.is_dir():
            continue
        for realm_group in sorted(p for p in tag_dir.iterdir() if p.is_dir()):
            if realm_group.name in busy_realms:
                continue
            agents = sorted(p for p in realm_group.iterdir() if p.is_dir())
            if all(not (a / "cgroup.procs").read_text().split() for a in agents):
                stale.extend([*agents, realm_group])
    return stale


def _mounts_under(prefix: str) -> list[str]:
    try:
        lines = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    targets = []
    for line in lines:
        fields = line.split()
        if len(fields) > 1:
            target = fields[1].replace("\\040", " ")
            if target.startswith(prefix):
                targets.append(target)
    # Deepest first, so nested mounts come off before their parents.
    return sorted(set(targets), key=len, reverse=True)
