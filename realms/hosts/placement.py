"""Placement: a launched realm waits on the shared queue; a host with room claims it.

The claim locks the claiming host's row (so one host's worker processes count its load
one at a time) and moves the realm to the host with a conditional UPDATE (so two hosts
never both take one realm)."""

from __future__ import annotations

import enum

from django.db import transaction
from django.db.models import Q

from realms.hosts.registry import live_realms
from realms.models import Host, Realm


class Claim(enum.Enum):
    PLACED = "placed"  # the realm is this host's now: provision it
    FULL = "full"  # no room here (or the host is not up): offer it again later
    TAKEN = "taken"  # another host has it, or it is no longer pending: drop it


def claim_realm(realm_id: str, host_id: str) -> Claim:
    """Try to place the pending realm ``realm_id`` on host ``host_id``."""
    with transaction.atomic():
        host = Host.objects.select_for_update().filter(host_id=host_id).first()
        if host is None or host.state != Host.State.UP:
            return Claim.FULL
        pending = Realm.objects.filter(realm_id=realm_id, state=Realm.State.PENDING)
        if pending.filter(host_id=host_id).exists():
            return Claim.PLACED  # a repeat delivery of a realm already placed here
        if live_realms(host_id) >= host.capacity:
            return Claim.FULL
        moved = pending.filter(Q(host__isnull=True)).update(host=host)
    return Claim.PLACED if moved else Claim.TAKEN
