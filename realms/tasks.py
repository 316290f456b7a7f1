"""Celery tasks of the realm lifecycle: provision, tick, conclude.

Each task takes ids and calls exactly one service function, which re-fetches the rows
and claims its work with a conditional UPDATE, so a duplicate delivery (or a second
worker) does nothing. Beat runs ``warden.tick_all`` every couple of seconds in
production; the embedded ``pit_up`` calls the same service functions in its own loop
(``realms.embedded.driver``). Services queue these by name (``bearpit.queue``), never
by importing them.

Recovery runs when a worker starts (``worker_ready``), not on a schedule: between two
ticks a healthy running realm holds no claim, so a periodic pass would re-attach it.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_process_init, worker_ready
from django.conf import settings

# The project's app, so that ``task.delay`` from any process goes to the configured broker
# (without it a shared task binds to Celery's default app and its default broker).
import bearpit.celery  # noqa: F401
from realms.batch.service import advance_background_batches
from realms.services.provision import bring_up_realm
from realms.services.recovery import recover_realms
from realms.warden.watch import finish_concluding, queue_ticks, watch_realm

log = logging.getLogger(__name__)


@shared_task(name="warden.tick", acks_late=True, ignore_result=True)
def tick(realm_id: str) -> str | None:
    result = watch_realm(realm_id)
    return None if result is None else result.state


@shared_task(name="warden.tick_all", ignore_result=True)
def tick_all() -> int:
    """Fan out one tick per running realm (beat's entry point)."""
    return queue_ticks()


@shared_task(name="realms.provision", acks_late=True, ignore_result=True)
def provision(realm_id: str) -> str | None:
    """Provision a pending realm and start it running; a repeat delivery does nothing."""
    return bring_up_realm(realm_id)


@shared_task(name="warden.conclude", acks_late=True, ignore_result=True)
def conclude(realm_id: str) -> bool:
    """The teardown of a realm its tick found over (announce, grace, stop, archive)."""
    return finish_concluding(realm_id)


@shared_task(name="batches.advance_all", ignore_result=True)
def advance_batches() -> int:
    """Move every batch the API or the console started along (beat's entry point): queue
    the runs that have room, and write the report of a batch whose runs have all ended."""
    return len(advance_background_batches(settings.BEARPIT_MAX_ACTIVE_REALMS))


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


@worker_process_init.connect
def _compile_runtime_bytecode(**_: object) -> None:
    """Each worker process compiles the agent runtime's bytecode before its first
    provisioning waits for it (realms/forge/bytecode.py)."""
    from realms.forge import bytecode

    bytecode.start_compiling()
