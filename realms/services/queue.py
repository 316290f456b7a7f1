"""Queueing a realm for the HTTP API: launch (or rerun), then hand it to a worker.

``pit_up`` runs a realm in its own process. The API instead hands a launched realm to
whatever provisions and ticks realms: the Celery workers behind a broker, or, under
``pit_serve`` (the embedded platform, no broker), the server process itself, which
opens a local hand-off here and provisions from it in a thread of its own. A process
with neither (a plain development server) refuses to launch: nothing would run the realm.
"""

from __future__ import annotations

import queue
import threading
from pathlib import Path

from django.conf import settings
from django.db import transaction

from bearpit.queue import enqueue
from realms.library import services as library
from realms.models import Realm
from realms.packages.schema.project import Project
from realms.services.consent import elevated_grants
from realms.services.launch import LaunchError, LaunchOptions, launch_realm
from realms.services.rerun import Mode, rerun_realm

NO_WORKER = (
    "this installation has no Celery broker (BEARPIT_REDIS_URL) and this process does not "
    "provision realms itself, so nothing would run the realm; start it with `pit_up`, serve "
    "the platform with `pit_serve`, or configure a broker and workers"
)


class QueueRefused(Exception):
    """The realm was not started; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ConsentRequired(LaunchError):
    """The package grants elevated tools and the launch did not consent to them."""

    def __init__(self, elevated: list[str]) -> None:
        super().__init__(
            [
                "the package grants elevated tools: "
                + "; ".join(elevated)
                + " (send allow_elevated_tools: true to consent)"
            ]
        )
        self.elevated = elevated


_local_lock = threading.Lock()
_local: queue.Queue[str] | None = None


def open_local_worker() -> queue.Queue[str]:
    """Make this process the worker for realms the API queues: their ids arrive on the
    returned queue (once their launch commits), for the caller to provision."""
    global _local
    with _local_lock:
        if _local is None:
            _local = queue.Queue()
        return _local


def pending_realm_ids() -> list[str]:
    """Realms launched but never provisioned (the server stopped first), oldest first."""
    rows = Realm.objects.filter(state=Realm.State.PENDING).order_by("created_at", "id")
    return list(rows.values_list("realm_id", flat=True))


def close_local_worker() -> None:
    global _local
    with _local_lock:
        _local = None


def _eager() -> bool:
    from bearpit.celery import app  # imported on first use: Celery is slow to import

    return bool(app.conf.task_always_eager)


def _local_worker() -> queue.Queue[str] | None:
    with _local_lock:
        return _local


def _hand_off(realm_id: str) -> None:
    local = _local_worker() if _eager() else None
    if local is None:
        enqueue("realms.provision", realm_id)
    else:
        transaction.on_commit(lambda: local.put(realm_id))


def active_realms() -> int:
    return Realm.objects.exclude(state__in=Realm.TERMINAL_STATES).count()


def _check_room(new_realm_id: str | None, capacity: int) -> None:
    if _eager() and _local_worker() is None:
        raise QueueRefused(503, NO_WORKER)
    if new_realm_id and Realm.objects.filter(realm_id=new_realm_id).exists():
        raise QueueRefused(409, f"realm id {new_realm_id!r} is already taken")
    if active_realms() >= capacity:
        raise QueueRefused(429, f"{capacity} realms are already active; wait for one to end")


def _consented(realm: Realm, allow_elevated: bool) -> Realm:
    elevated = elevated_grants(Project.model_validate(dict(realm.project)))
    if elevated and not allow_elevated:
        raise ConsentRequired(elevated)  # inside the launch's transaction: rolls it back
    _hand_off(realm.realm_id)
    return realm


def queue_realm(
    package: str, options: LaunchOptions, *, capacity: int, allow_elevated: bool = False
) -> Realm:
    """Launch the library scenario ``package`` and queue its provisioning.

    Raises :class:`QueueRefused` (404 unknown package, 409 realm id taken, 429 at
    capacity, 503 no worker) or :class:`LaunchError` (bad parameters, tools, provider,
    elevated tools without consent).
    """
    _check_room(options.realm_id, capacity)
    try:
        scenario = library.resolve(package)
    except library.LibraryError:
        library.sync_examples()  # a bundled example not listed yet
        try:
            scenario = library.resolve(package)
        except library.LibraryError as exc:
            raise QueueRefused(404, str(exc)) from exc
    path = library.materialize(scenario)
    with transaction.atomic():
        return _consented(launch_realm(path, options), allow_elevated)


def queue_package(
    path: Path, options: LaunchOptions, *, capacity: int, allow_elevated: bool = False
) -> Realm:
    """Launch the package folder at ``path`` (one outside the library, such as a Scribe
    draft) and queue its provisioning, under the same refusals as :func:`queue_realm`."""
    _check_room(options.realm_id, capacity)
    with transaction.atomic():
        return _consented(launch_realm(path, options), allow_elevated)


def _library_copy(realm: Realm) -> Path | None:
    """The library's current copy of the scenario a realm was launched from, if it was
    launched from the library (whose folders are content-addressed, so the realm's own
    path keeps the version it ran)."""
    library_root = (Path(settings.BEARPIT_HOME) / "library").resolve()
    path = Path(realm.package_path).resolve() if realm.package_path else None
    if path is None or not path.is_relative_to(library_root):
        return None
    try:
        return library.materialize(library.resolve(path.name))
    except library.LibraryError:
        return None


def queue_rerun(
    realm_id: str,
    mode: Mode,
    *,
    capacity: int,
    new_realm_id: str | None = None,
    allow_provider_fallback: bool = False,
    allow_elevated: bool = False,
) -> Realm:
    """Rerun an earlier realm (``pit_rerun``'s service) and queue the new realm's
    provisioning, under the same refusals as :func:`queue_realm`. ``latest`` reloads a
    library scenario from the library's current copy."""
    if not Realm.objects.filter(realm_id=realm_id).exists():
        raise QueueRefused(404, f"realm {realm_id!r} has no launch record to rerun")
    _check_room(new_realm_id, capacity)
    old = Realm.objects.get(realm_id=realm_id)
    with transaction.atomic():
        realm = rerun_realm(
            realm_id,
            mode,
            new_realm_id=new_realm_id,
            allow_provider_fallback=allow_provider_fallback,
            package=_library_copy(old) if mode == "latest" else None,
        )
        return _consented(realm, allow_elevated)


__all__ = [
    "ConsentRequired",
    "LaunchError",
    "QueueRefused",
    "active_realms",
    "close_local_worker",
    "open_local_worker",
    "pending_realm_ids",
    "queue_package",
    "queue_realm",
    "queue_rerun",
]
