"""Queueing a realm from the library for the HTTP API: launch, then hand it to a worker.

``pit_up`` runs a realm in its own process; the API instead needs Celery workers to
provision and tick it, so it refuses to launch where no broker is configured.
"""

from __future__ import annotations

from bearpit.queue import enqueue
from realms.library import services as library
from realms.models import Realm
from realms.services.launch import LaunchError, LaunchOptions, launch_realm


class QueueRefused(Exception):
    """The realm was not started; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def active_realms() -> int:
    return Realm.objects.exclude(state__in=Realm.TERMINAL_STATES).count()


def queue_realm(package: str, options: LaunchOptions, *, capacity: int) -> Realm:
    """Launch the library scenario ``package`` and queue its provisioning.

    Raises :class:`QueueRefused` (404 unknown package, 409 realm id taken, 429 at
    capacity, 503 no worker) or :class:`LaunchError` (bad parameters, tools, provider).
    """
    from bearpit.celery import app  # imported on first use: Celery is slow to import

    if app.conf.task_always_eager:
        raise QueueRefused(
            503,
            "this installation has no Celery broker (BEARPIT_REDIS_URL), so nothing would run "
            "the realm; start it with `pit_up`, or configure a broker and workers",
        )
    if options.realm_id and Realm.objects.filter(realm_id=options.realm_id).exists():
        raise QueueRefused(409, f"realm id {options.realm_id!r} is already taken")
    if active_realms() >= capacity:
        raise QueueRefused(429, f"{capacity} realms are already active; wait for one to end")
    try:
        scenario = library.resolve(package)
    except library.LibraryError as exc:
        raise QueueRefused(404, str(exc)) from exc
    realm = launch_realm(library.materialize(scenario), options)
    enqueue("realms.provision", realm.realm_id)
    return realm


__all__ = ["LaunchError", "QueueRefused", "active_realms", "queue_realm"]
