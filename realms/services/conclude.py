"""Conclude: end a realm and archive it (format §1.2 steps 6 and 7).

``concluding{reason, detail}`` → lift the floor → ``REALM_ENDING — <kind>: <detail>.
Stand down.`` → a short grace → the teardown (:mod:`realms.services.teardown`) →
``archived`` and the archive folder ``pit_archive`` writes. A step that fails, writing
the archive included, is chronicled as ``teardown_error`` and never blocks the end.

An interrupted realm gets the same teardown and ends ``interrupted``, without an archive.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chronicle import selectors
from chronicle.archive import archive_realm
from chronicle.kinds import Kind, Lifecycle
from chronicle.services import record_event
from realms.herald.floor import open_floor
from realms.herald.posting import announce
from realms.models import Realm
from realms.services.teardown import step, tear_down

log = logging.getLogger(__name__)

LIVE = (Realm.State.PROVISIONING, Realm.State.RUNNING)


def ending_text(reason: str, detail: str) -> str:
    return f"REALM_ENDING — {reason}: {detail}. Stand down."


def begin_conclusion(realm_id: str, reason: str, detail: str) -> bool:
    """Claim the realm for concluding; False when it is already concluding or over."""
    with transaction.atomic():
        moved = Realm.objects.filter(realm_id=realm_id, state__in=LIVE).update(
            state=Realm.State.CONCLUDING,
            conclusion_reason=reason[:40],
            conclusion_detail=detail[:2000],
            updated_at=timezone.now(),
        )
        if not moved:
            return False
        record_event(
            realm_id,
            Kind.LIFECYCLE,
            {"event": Lifecycle.CONCLUDING, "reason": reason, "detail": detail},
        )
    return True


def conclude_realm(
    realm_id: str, reason: str, detail: str, *, grace_s: float | None = None
) -> bool:
    """Conclude and archive a live realm; False if someone else already did."""
    if not begin_conclusion(realm_id, reason, detail):
        return False
    finish_conclusion(realm_id, announce_end=True, grace_s=grace_s)
    return True


def finish_conclusion(
    realm_id: str, *, announce_end: bool = True, grace_s: float | None = None
) -> None:
    """The teardown half: also used to finish a conclusion a crashed worker left."""
    realm = Realm.objects.get(realm_id=realm_id)
    reason, detail = realm.conclusion_reason, realm.conclusion_detail
    if announce_end:
        step(realm_id, "open floor", lambda: open_floor(realm_id))
        step(realm_id, "announce", lambda: announce(realm_id, ending_text(reason, detail)))
        wait = settings.BEARPIT_CONCLUDE_GRACE_S if grace_s is None else grace_s
        if wait > 0:
            time.sleep(wait)
    tear_down(realm_id, "realm concluded")
    verdict = selectors.verdict(realm_id) or {}
    with transaction.atomic():
        record_event(realm_id, Kind.LIFECYCLE, {"event": Lifecycle.ARCHIVED})
        # Written inside this transaction: the archive holds the ``archived`` event, and
        # whoever sees the state ARCHIVED finds the folder.
        step(realm_id, "write archive", lambda: _write_archive(realm_id))
        Realm.objects.filter(realm_id=realm_id).update(
            state=Realm.State.ARCHIVED,
            outcome=str(verdict.get("outcome") or ""),
            concluded_at=timezone.now(),
            claimed_by="",
            claimed_until=None,
            updated_at=timezone.now(),
        )


def _write_archive(realm_id: str) -> None:
    # A savepoint: a database error while archiving must not spoil the transaction that
    # marks the realm archived.
    with transaction.atomic():
        archive_realm(realm_id)


def interrupt_realm(realm_id: str, detail: str, *, local: bool = True) -> bool:
    """A realm that cannot be resumed: tear it down and mark it ``interrupted``.
    ``local=False`` when its sandboxes are on a host that died (see :func:`tear_down`)."""
    with transaction.atomic():
        moved = Realm.objects.filter(
            realm_id=realm_id, state__in=(*LIVE, Realm.State.PENDING, Realm.State.CONCLUDING)
        ).update(
            state=Realm.State.INTERRUPTED,
            conclusion_reason="interrupted",
            conclusion_detail=detail[:2000],
            concluded_at=timezone.now(),
            updated_at=timezone.now(),
        )
        if not moved:
            return False
        # The concluding event carries the reason the report's headline shows.
        record_event(
            realm_id,
            Kind.LIFECYCLE,
            {"event": Lifecycle.CONCLUDING, "reason": "interrupted", "detail": detail},
        )
        record_event(realm_id, Kind.LIFECYCLE, {"event": Lifecycle.INTERRUPTED, "detail": detail})
    tear_down(realm_id, "interrupted", local=local)
    return True
