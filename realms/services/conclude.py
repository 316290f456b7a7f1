"""Conclude: end a realm and archive it (format §1.2 steps 6 and 7).

``concluding{reason, detail}`` → lift the floor → ``REALM_ENDING — <kind>: <detail>.
Stand down.`` → a short grace → stop the sandboxes → revoke the keys → capture the
declared outputs (one OUTPUT event per file) → close the bus → ingest the last
traces → ``archived``. A teardown step that fails is chronicled as
``teardown_error`` and never blocks the report.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chronicle import selectors
from chronicle.kinds import Kind, Lifecycle
from chronicle.services import record_event
from ledger.services.keys import revoke_realm_keys
from realms.forge.outputs import capture_outputs
from realms.forge.services import release_realm, stop_realm_sandboxes
from realms.herald.bus import teardown_bus
from realms.herald.floor import open_floor
from realms.herald.posting import announce
from realms.herald.reconcile import reconcile
from realms.models import Realm
from realms.plan import plan_of
from realms.services import traces

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


def _step(realm_id: str, what: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except Exception as exc:
        log.warning("teardown of %s: %s failed: %s", realm_id, what, exc)
        with transaction.atomic():
            record_event(
                realm_id,
                Kind.LIFECYCLE,
                {
                    "event": Lifecycle.TEARDOWN_ERROR,
                    "step": what,
                    "detail": f"{type(exc).__name__}: {exc}"[:500],
                },
            )
        return None


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
        _step(realm_id, "open floor", lambda: open_floor(realm_id))
        _step(realm_id, "announce", lambda: announce(realm_id, ending_text(reason, detail)))
        wait = settings.BEARPIT_CONCLUDE_GRACE_S if grace_s is None else grace_s
        if wait > 0:
            time.sleep(wait)
    _step(realm_id, "stop sandboxes", lambda: stop_realm_sandboxes(realm_id, "realm concluded"))
    _step(realm_id, "revoke keys", lambda: revoke_realm_keys(realm_id))
    _step(realm_id, "ingest traces", lambda: traces.ingest_all(realm_id, drain=True))
    globs = list(plan_of(realm).outputs)
    captured = _step(realm_id, "capture outputs", lambda: capture_outputs(realm_id, globs))
    _step(realm_id, "release sandboxes", lambda: release_realm(realm_id))
    # Messages whose push a homeserver crash lost are read back before the rooms close,
    # so the transcript and report are complete.
    _step(realm_id, "reconcile bus", lambda: reconcile(realm_id))
    _step(realm_id, "close bus", lambda: teardown_bus(realm_id))
    verdict = selectors.verdict(realm_id) or {}
    with transaction.atomic():
        for entry in captured or []:
            record_event(realm_id, Kind.OUTPUT, entry)
        record_event(realm_id, Kind.LIFECYCLE, {"event": Lifecycle.ARCHIVED})
        Realm.objects.filter(realm_id=realm_id).update(
            state=Realm.State.ARCHIVED,
            outcome=str(verdict.get("outcome") or ""),
            concluded_at=timezone.now(),
            claimed_by="",
            claimed_until=None,
            updated_at=timezone.now(),
        )


def interrupt_realm(realm_id: str, detail: str) -> bool:
    """A realm that cannot be resumed: tear it down and mark it ``interrupted``."""
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
    _step(realm_id, "stop sandboxes", lambda: stop_realm_sandboxes(realm_id, "interrupted"))
    _step(realm_id, "revoke keys", lambda: revoke_realm_keys(realm_id))
    _step(realm_id, "ingest traces", lambda: traces.ingest_all(realm_id, drain=True))
    # Releasing deletes the shared folder: what the package declared is kept first.
    realm = Realm.objects.filter(realm_id=realm_id).first()
    globs = list(plan_of(realm).outputs) if realm else []
    captured = _step(realm_id, "capture outputs", lambda: capture_outputs(realm_id, globs))
    with transaction.atomic():
        for entry in captured or []:
            record_event(realm_id, Kind.OUTPUT, entry)
    _step(realm_id, "release sandboxes", lambda: release_realm(realm_id))
    # Messages whose push a homeserver crash lost are read back before the rooms close,
    # so the transcript and report are complete.
    _step(realm_id, "reconcile bus", lambda: reconcile(realm_id))
    _step(realm_id, "close bus", lambda: teardown_bus(realm_id))
    return True
