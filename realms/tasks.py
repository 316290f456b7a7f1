"""Celery tasks of the realm lifecycle: provision, tick, conclude.

Each task takes ids and calls exactly one service function, which re-fetches the rows
and claims its work with a conditional UPDATE, so a duplicate delivery (or a second
worker) does nothing. Beat runs ``warden.tick_all`` every couple of seconds in
production; the embedded ``pit_up`` calls the same service functions in its own loop
(``realms.embedded.driver``). Services queue these by name (``bearpit.queue``), never
by importing them.

Recovery runs when a worker starts (``worker_ready``), not on a schedule: between two
ticks a healthy running realm holds no claim, so a periodic pass would re-attach it.

With ``BEARPIT_HOST_ID`` (required in production) the worker is a worker host
(realms/hosts): it consumes the shared queue and its own ``host.<id>``, reaps and
recovers only what is its own, beats, and provisions a realm only once it has claimed
it within its capacity; ticks and teardowns reach it by the router.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_process_init, worker_ready
from django.conf import settings

# The project's app, so that ``task.delay`` from any process goes to the configured broker
# (without it a shared task binds to Celery's default app and its default broker).
import bearpit.celery  # noqa: F401
from bearpit.production import HOST_ID_REQUIRED
from realms.batch.service import advance_background_batches
from realms.hosts.dead import check_hosts, come_back
from realms.hosts.packages import localize_package
from realms.hosts.placement import Claim, claim_realm
from realms.hosts.registry import Heartbeat, announce, host_queue, this_host_id
from realms.services.provision import bring_up_realm
from realms.services.recovery import recover_realms
from realms.warden.watch import finish_concluding, queue_ticks, watch_realm

log = logging.getLogger(__name__)

# How soon a realm no host had room for is offered again.
PLACE_RETRY_S = 1.0
_heartbeat: Heartbeat | None = None


@shared_task(name="warden.tick", acks_late=True, ignore_result=True)
def tick(realm_id: str) -> str | None:
    result = watch_realm(realm_id)
    return None if result is None else result.state


@shared_task(name="warden.tick_all", ignore_result=True)
def tick_all() -> int:
    """Fan out one tick per running realm (beat's entry point)."""
    return queue_ticks()


@shared_task(
    name="realms.provision", bind=True, acks_late=True, ignore_result=True, max_retries=None
)
def provision(self: Any, realm_id: str) -> str | None:
    """Provision a pending realm and start it running; a repeat delivery does nothing.
    A worker host first claims it: with no room the task goes back to the shared queue
    for another host (or this one, later)."""
    host_id = this_host_id()
    if host_id is not None and not self.app.conf.task_always_eager:
        claim = claim_realm(realm_id, host_id)
        if claim is Claim.FULL:
            raise self.retry(countdown=PLACE_RETRY_S)
        if claim is Claim.TAKEN:
            return None
        localize_package(realm_id)
    return bring_up_realm(realm_id)


@shared_task(name="hosts.check", ignore_result=True)
def check() -> dict[str, Any]:
    """Beat's look for dead worker hosts, run by whichever host takes it."""
    return check_hosts(me=this_host_id())


@shared_task(name="warden.conclude", acks_late=True, ignore_result=True)
def conclude(realm_id: str) -> bool:
    """The teardown of a realm its tick found over (announce, grace, stop, archive)."""
    return finish_concluding(realm_id)


@celeryd_after_setup.connect
def _consume_host_queue(sender: str, instance: Any, **_: object) -> None:
    """A worker host consumes its own queue besides the shared one; in production a
    worker without a host id refuses to start (exit 2, one line)."""
    host_id = this_host_id()
    if host_id is None:
        if settings.BEARPIT_PRODUCTION:
            sys.stderr.write(f"celery worker: cannot start: {HOST_ID_REQUIRED}\n")
            sys.stderr.flush()
            os._exit(2)  # a signal handler's exception would only be logged
        return
    instance.app.amqp.queues.select_add(host_queue(host_id))


@shared_task(name="batches.advance_all", ignore_result=True)
def advance_batches() -> int:
    """Move every batch the API or the console started along (beat's entry point): queue
    the runs that have room, and write the report of a batch whose runs have all ended."""
    return len(advance_background_batches(settings.BEARPIT_MAX_ACTIVE_REALMS))


@worker_ready.connect
def _recover_on_start(**_: object) -> None:
    """A (re)started worker resumes what the last one left running; a worker host
    first starts beating, then reaps what it left behind, and only then takes realms."""
    global _heartbeat
    host_id = this_host_id()
    try:
        if host_id is None:
            outcome: dict[str, Any] = recover_realms()
        else:
            if _heartbeat is None:
                announce(host_id)
                _heartbeat = Heartbeat(host_id).start()
            outcome = come_back(host_id)
    except Exception:
        log.exception("recovering realms at worker start failed")
        return
    if outcome:
        log.info("recovered realms: %s", outcome)
    if host_id is not None:
        log.info("worker host %s is up (queue %s)", host_id, host_queue(host_id))


@worker_process_init.connect
def _compile_runtime_bytecode(**_: object) -> None:
    """Each worker process compiles the agent runtime's bytecode before its first
    provisioning waits for it (realms/forge/bytecode.py)."""
    from realms.forge import bytecode

    bytecode.start_compiling()
