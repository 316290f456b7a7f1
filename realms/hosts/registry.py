"""A worker host's row: announced when its worker starts, kept fresh by a heartbeat."""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from realms.models import Host, Realm

log = logging.getLogger(__name__)


def host_queue(host_id: str) -> str:
    """The Celery queue only ``host_id``'s worker consumes."""
    return f"host.{host_id}"


def this_host_id() -> str | None:
    """This worker's host id (``BEARPIT_HOST_ID``), None when it has none."""
    return settings.BEARPIT_HOST_ID or None


def live_realms(host_id: str) -> int:
    """The host's load: its realms that have not ended (pending ones placed on it count)."""
    return Realm.objects.filter(host_id=host_id).exclude(state__in=Realm.TERMINAL_STATES).count()


def announce(host_id: str, state: str = Host.State.REAPING) -> Host:
    """Create or refresh the host's row from this process's settings, in ``state``."""
    now = timezone.now()
    host, _ = Host.objects.update_or_create(
        host_id=host_id,
        defaults={
            "capacity": settings.BEARPIT_HOST_CAPACITY,
            "backend": settings.BEARPIT_SANDBOX,
            "state": state,
            "last_heartbeat": now,
            "started_at": now,
            "dead_at": None,
        },
    )
    return host


def mark_up(host_id: str) -> None:
    """The host has reaped and recovered: it takes realms from now on."""
    Host.objects.filter(host_id=host_id).update(state=Host.State.UP, last_heartbeat=timezone.now())


def beat(host_id: str, now: datetime | None = None) -> bool:
    """Record that the host is alive; False when its row is gone."""
    return bool(Host.objects.filter(host_id=host_id).update(last_heartbeat=now or timezone.now()))


class Heartbeat:
    """A daemon thread of the worker's main process that beats every
    ``BEARPIT_HOST_HEARTBEAT_S``; it stops with the process, which is the point."""

    def __init__(self, host_id: str, interval_s: float | None = None) -> None:
        self.host_id = host_id
        self.interval_s = settings.BEARPIT_HOST_HEARTBEAT_S if interval_s is None else interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                beat(self.host_id)
            except Exception:
                log.exception("heartbeat of host %s failed", self.host_id)
                close_old_connections()
            self._stop.wait(self.interval_s)
        connection.close()
