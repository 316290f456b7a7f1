"""Crash recovery: what a restarted worker (or ``pit_up``) does with live realms.

* ``running``: re-attach to the sandboxes. If every agent that should be alive still
  is, the realm resumes (its Warden state is on its row); otherwise it is concluded
  as ``interrupted``, which still leaves a full Chronicle for the report.
* ``provisioning``: half-built, so ``interrupted`` and torn down.
* ``concluding``: the teardown is finished (without a second announcement).

A realm whose tick is claimed by another worker that is still within its claim is
left alone: that worker is alive and owns it. A claim held by a process of this host
that no longer exists is a crashed worker's, and does not count.
"""

from __future__ import annotations

import logging

from django.db.models import Q
from django.utils import timezone

from realms.forge import procs
from realms.forge.services import reattach
from realms.models import Realm, RealmAgent
from realms.services.conclude import finish_conclusion, interrupt_realm
from realms.warden.state import rewind_mirror_check

log = logging.getLogger(__name__)


def resume_or_interrupt(realm_id: str) -> str:
    """Re-attach a running realm's sandboxes; ``resumed`` or ``interrupted``."""
    live = {row.agent_id for row in reattach(realm_id)}
    expected = set(
        RealmAgent.objects.filter(
            realm__realm_id=realm_id, state=RealmAgent.State.RUNNING
        ).values_list("agent_id", flat=True)
    )
    lost = sorted(expected - live)
    if lost:
        interrupt_realm(realm_id, f"restart: sandboxes of {', '.join(lost)} were gone")
        return "interrupted"
    Realm.objects.filter(realm_id=realm_id).update(claimed_by="", claimed_until=None)
    # What agents said while nobody was mirroring is read back from the rooms now.
    rewind_mirror_check(realm_id)
    return "resumed"


def recover_realms(
    *, only: str | None = None, force: bool = False, host_id: str | None = None
) -> dict[str, str]:
    """Recover every live realm (or just ``only``, or just those placed on worker host
    ``host_id``); realm id → what was done.

    ``force`` ignores tick claims: right for the embedded default, where the process
    that held a claim is the one that crashed.
    """
    now = timezone.now()
    rows = Realm.objects.filter(
        state__in=(Realm.State.PROVISIONING, Realm.State.RUNNING, Realm.State.CONCLUDING)
    )
    if not force:
        held = rows.filter(Q(claimed_until__gt=now) & ~Q(claimed_by=""))
        dead = [r.realm_id for r in held if procs.identity_alive(r.claimed_by) is False]
        rows = rows.exclude(Q(claimed_until__gt=now) & ~Q(claimed_by="") & ~Q(realm_id__in=dead))
    if only is not None:
        rows = rows.filter(realm_id=only)
    if host_id is not None:
        rows = rows.filter(host_id=host_id)
    outcome: dict[str, str] = {}
    for realm in rows:
        try:
            if realm.state == Realm.State.PROVISIONING:
                interrupt_realm(realm.realm_id, "restart: provisioning was cut short")
                outcome[realm.realm_id] = "interrupted"
            elif realm.state == Realm.State.CONCLUDING:
                finish_conclusion(realm.realm_id, announce_end=False)
                outcome[realm.realm_id] = "archived"
            else:
                outcome[realm.realm_id] = resume_or_interrupt(realm.realm_id)
        except Exception:
            log.exception("recovering %s failed", realm.realm_id)
            outcome[realm.realm_id] = "error"
    return outcome
