"""The server's batch driver for ``pit_serve``: a thread that moves every batch the API
or the console started along, once a tick period, with nobody reading it.

What Celery beat's ``batches.advance_all`` does behind a broker, in a thread of the
server process (its realms are provisioned by the server's own provisioning thread and
ticked by its ticker). A pass only queues runs and writes reports, so it never holds up
a realm's tick; a batch left running when the server stops goes on at the next start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections, connections

from realms.batch.service import advance_background_batches

log = logging.getLogger(__name__)


class BatchDriver:
    def __init__(self, period_s: float, say: Callable[[str], None]) -> None:
        self._period_s = period_s
        self._say = say
        self._finished: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="batch-driver", daemon=True)

    def start(self) -> BatchDriver:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._period_s):
                close_old_connections()
                try:
                    self.advance()
                except Exception:
                    log.exception("advancing the batches failed")
        finally:
            connections.close_all()

    def advance(self) -> None:
        states = advance_background_batches(settings.BEARPIT_MAX_ACTIVE_REALMS)
        for batch_id, state in sorted(states.items()):
            if state == "finished" and batch_id not in self._finished:
                self._finished.add(batch_id)
                self._say(f"batch finished: {batch_id}")

    def stop(self, timeout_s: float = 60.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
