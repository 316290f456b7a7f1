"""Celery tasks of the realm lifecycle: provision, tick, conclude, recover.

Each takes ids, re-fetches rows, and claims its work with a conditional UPDATE so a
duplicate delivery (or a second worker) does nothing. ``warden.tick`` is claimed on
``Realm.claimed_by/claimed_until``: two workers never tick one realm at once, and a
claim left by a dead worker expires. Beat runs ``warden.tick_all`` every couple of
seconds in production; the embedded ``pit_up`` calls ``tick_realm`` in its own loop.
"""

from __future__ import annotations

import logging
import os
import socket
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from realms.models import Realm
from realms.services.conclude import conclude_realm
from realms.services.provision import ProvisionError, provision_realm, start_running
from realms.services.recovery import recover_realms
from realms.warden.models import WardenState
from realms.warden.tick import TickResult, run_tick

log = logging.getLogger(__name__)

MAX_FAILED_TICKS = 5


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


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
    """Claim, tick, release. None when the realm is not running or is claimed elsewhere."""
    me = worker or worker_name()
    if not claim_tick(realm_id, me):
        return None
    try:
        return run_tick(realm_id)
    except Exception:
        log.exception("tick of %s failed", realm_id)
        _count_failure(realm_id)
        return None
    finally:
        release_tick(realm_id, me)


def _count_failure(realm_id: str) -> None:
    """Five failed ticks in a row conclude the realm: a wedged watch loop must end."""
    WardenState.objects.filter(realm__realm_id=realm_id).update(failures=F("failures") + 1)
    failures = (
        WardenState.objects.filter(realm__realm_id=realm_id)
        .values_list("failures", flat=True)
        .first()
    )
    if failures is not None and failures >= MAX_FAILED_TICKS:
        conclude_realm(realm_id, "manual", f"watch loop wedged ({failures} failed ticks)")


@shared_task(name="warden.tick", acks_late=True, ignore_result=True)
def tick(realm_id: str) -> str | None:
    result = tick_realm(realm_id)
    return None if result is None else result.state


@shared_task(name="warden.tick_all", ignore_result=True)
def tick_all() -> int:
    """Fan out one tick per running realm (beat's entry point)."""
    ids = list(Realm.objects.filter(state=Realm.State.RUNNING).values_list("realm_id", flat=True))
    for realm_id in ids:
        tick.delay(realm_id)
    return len(ids)


@shared_task(name="realms.provision", acks_late=True, ignore_result=True)
def provision(realm_id: str) -> str | None:
    """Provision a pending realm and start it running; a repeat delivery does nothing."""
    try:
        realm = provision_realm(realm_id)
    except ProvisionError:
        return Realm.State.FAILED
    if realm is None:
        return None
    started = start_running(realm_id)
    return None if started is None else started.state


@shared_task(name="warden.conclude", acks_late=True, ignore_result=True)
def conclude(realm_id: str, reason: str, detail: str) -> bool:
    return conclude_realm(realm_id, reason, detail)


@shared_task(name="warden.recover", ignore_result=True)
def recover() -> dict[str, str]:
    return recover_realms()


@worker_ready.connect
def _recover_on_start(**_: object) -> None:
    """A (re)started worker resumes what the last one left running."""
    try:
        outcome = recover_realms()
    except Exception:
        log.exception("recovering realms at worker start failed")
        return
    if outcome:
        log.info("recovered realms: %s", outcome)
