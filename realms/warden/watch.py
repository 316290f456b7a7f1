"""The Warden's claimed tick, and the teardown of a realm a tick ended.

``warden.tick`` is claimed on ``Realm.claimed_by/claimed_until``: two workers never
tick one realm at once, and a claim left by a dead worker expires.

A tick that finds the realm over only claims the conclusion (``concluding``); the
teardown, with its grace period, runs apart from the tick: as the ``warden.conclude``
task on a worker, or in the foreground driver's own loop in the embedded default.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from bearpit.queue import enqueue
from realms.forge import procs
from realms.models import Realm
from realms.services.conclude import begin_conclusion, finish_conclusion
from realms.warden.state import count_failed_tick
from realms.warden.tick import TickResult, run_tick

log = logging.getLogger(__name__)

MAX_FAILED_TICKS = 5
# A teardown waits out the grace period, then stops sandboxes and archives: far longer
# than a tick. Its claim must outlast it, or recovery would finish it a second time.
CONCLUDE_CLAIM_S = 600.0


def worker_name() -> str:
    return procs.identity()


def claim_tick(realm_id: str, worker: str, ttl_s: float | None = None) -> bool:
    """Take the realm's tick for ``ttl_s`` seconds; False if another worker holds it."""
    now = timezone.now()
    ttl = settings.BEARPIT_TICK_CLAIM_S if ttl_s is None else ttl_s
    return (
        Realm.objects.filter(realm_id=realm_id, state=Realm.State.RUNNING)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now) | Q(claimed_by=worker))
        .update(claimed_by=worker, claimed_until=now + timedelta(seconds=ttl))
        == 1
    )


def release_tick(realm_id: str, worker: str) -> None:
    Realm.objects.filter(realm_id=realm_id, claimed_by=worker).update(
        claimed_by="", claimed_until=None
    )


def tick_realm(realm_id: str, worker: str | None = None) -> TickResult | None:
    """Claim, tick, release. None when the realm is not running or is claimed elsewhere.

    ``concluded`` on the result: the realm is now ``concluding`` and its teardown is
    the caller's to run (see :func:`watch_realm`).
    """
    me = worker or worker_name()
    if not claim_tick(realm_id, me):
        return None
    try:
        return run_tick(realm_id)
    except Exception:
        log.exception("tick of %s failed", realm_id)
        return _count_failure(realm_id)
    finally:
        release_tick(realm_id, me)


def _count_failure(realm_id: str) -> TickResult | None:
    """Five failed ticks in a row conclude the realm: a wedged watch loop must end."""
    failures = count_failed_tick(realm_id)
    if failures is None or failures < MAX_FAILED_TICKS:
        return None
    if not begin_conclusion(realm_id, "manual", f"watch loop wedged ({failures} failed ticks)"):
        return None
    return TickResult(realm_id, Realm.State.CONCLUDING, concluded="manual")


def watch_realm(realm_id: str) -> TickResult | None:
    """A worker's tick: when it ends the realm, the teardown is queued as its own task."""
    result = tick_realm(realm_id)
    if result is not None and result.concluded is not None:
        enqueue("warden.conclude", realm_id)
    return result


def finish_concluding(realm_id: str, worker: str | None = None) -> bool:
    """Run the teardown of a realm a tick left ``concluding``; False when it is not
    concluding or another worker is already tearing it down (a repeat delivery)."""
    me = worker or worker_name()
    now = timezone.now()
    claimed = (
        Realm.objects.filter(realm_id=realm_id, state=Realm.State.CONCLUDING)
        .filter(Q(claimed_until__isnull=True) | Q(claimed_until__lt=now) | Q(claimed_by=me))
        .update(claimed_by=me, claimed_until=now + timedelta(seconds=CONCLUDE_CLAIM_S))
    )
    if not claimed:
        return False
    finish_conclusion(realm_id, announce_end=True)
    return True


def queue_ticks() -> int:
    """Queue one ``warden.tick`` per running realm; how many."""
    ids = list(Realm.objects.filter(state=Realm.State.RUNNING).values_list("realm_id", flat=True))
    for realm_id in ids:
        enqueue("warden.tick", realm_id)
    return len(ids)
