"""Hosts that die and hosts that come back.

A surviving host's beat task (``hosts.check``) marks a host whose heartbeat is older than
``BEARPIT_HOST_DEAD_AFTER`` dead (a conditional UPDATE: one checker wins) and concludes
its live realms as ``interrupted`` through the one interrupt path, skipping the steps
only the dead host could do (its sandboxes are out of reach): keys revoked, bus read
back and closed, the Chronicle kept whole. A host that comes back (same id) reaps the
sandboxes, processes and mounts of realms no longer its own, resumes those still its own,
and only then takes new realms.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from realms.forge.reap import reap
from realms.hosts.registry import announce, mark_up
from realms.models import Host, Realm
from realms.services.conclude import interrupt_realm
from realms.services.recovery import recover_realms

log = logging.getLogger(__name__)


def dead_detail(host_id: str, silent_s: float) -> str:
    return f"worker host {host_id} stopped answering (no heartbeat for {silent_s:.0f}s)"


def find_dead_hosts(now: datetime | None = None, *, me: str | None = None) -> list[str]:
    """Mark every silent host dead (not ``me``); the ids this call marked."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.BEARPIT_HOST_DEAD_AFTER)
    silent = Host.objects.filter(last_heartbeat__lt=cutoff).exclude(state=Host.State.DEAD)
    if me:
        silent = silent.exclude(host_id=me)
    marked = []
    for host_id in list(silent.values_list("host_id", flat=True)):
        moved = (
            Host.objects.filter(host_id=host_id, last_heartbeat__lt=cutoff)
            .exclude(state=Host.State.DEAD)
            .update(state=Host.State.DEAD, dead_at=now)
        )
        if moved:
            log.warning("worker host %s is dead: no heartbeat since %s", host_id, cutoff)
            marked.append(host_id)
    return marked


def interrupt_dead_hosts_realms(now: datetime | None = None) -> dict[str, str]:
    """Interrupt every live realm placed on a dead host; realm id → its host.

    Runs on every check, not only when a host is first marked: a checker that died
    half-way leaves the rest to the next one."""
    now = now or timezone.now()
    rows = (
        Realm.objects.filter(host__state=Host.State.DEAD)
        .exclude(state__in=Realm.TERMINAL_STATES)
        .select_related("host")
    )
    done: dict[str, str] = {}
    for realm in rows:
        host = realm.host
        assert host is not None  # the filter above
        silent = (now - host.last_heartbeat).total_seconds()
        if interrupt_realm(realm.realm_id, dead_detail(host.host_id, silent), local=False):
            done[realm.realm_id] = host.host_id
    return done


def check_hosts(me: str | None = None) -> dict[str, Any]:
    """The beat task's pass: dead hosts found, and their realms interrupted."""
    now = timezone.now()
    marked = find_dead_hosts(now, me=me)
    interrupted = interrupt_dead_hosts_realms(now)
    return {"dead": marked, "interrupted": interrupted}


def come_back(host_id: str) -> dict[str, Any]:
    """A (re)started worker of ``host_id``: announce (reaping), reap what realms that are
    no longer its own left on this host, resume or interrupt its own, then take work."""
    announce(host_id, Host.State.REAPING)
    reaped = reap(host_id=host_id)
    recovered = recover_realms(host_id=host_id)
    mark_up(host_id)
    return {"reaped": reaped, "recovered": recovered}
