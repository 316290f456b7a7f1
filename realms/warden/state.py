"""Every write of the Warden's own row (``WardenState``) outside its tick.

Only the Warden writes its state: launch, provisioning and recovery call these
functions rather than updating the row themselves.
"""

from __future__ import annotations

from django.db.models import F

from realms.models import Realm
from realms.warden.models import WardenState


def create_state(realm: Realm) -> WardenState:
    """The Warden's empty row for a realm being launched."""
    return WardenState.objects.create(realm=realm)


def mark_watch_started(realm: Realm, ts_ms: int) -> None:
    WardenState.objects.filter(realm=realm).update(watch_started_ms=ts_ms)


def rewind_mirror_check(realm_id: str) -> None:
    """Make the next tick check the mirror (it does on tick 0): for a resumed realm,
    whose agents spoke while nobody was mirroring."""
    WardenState.objects.filter(realm__realm_id=realm_id).update(ticks=0)


def count_failed_tick(realm_id: str) -> int | None:
    """One more failed tick in a row; how many now (None: the realm has no state)."""
    WardenState.objects.filter(realm__realm_id=realm_id).update(failures=F("failures") + 1)
    return (
        WardenState.objects.filter(realm__realm_id=realm_id)
        .values_list("failures", flat=True)
        .first()
    )
