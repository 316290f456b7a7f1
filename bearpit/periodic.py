"""A thread that does one pass of work every period, with the database connections a
thread of its own needs: stale ones dropped before each pass, all closed when it ends.

The server process (``pit_serve``) runs its beat this way: the Warden's ticks and the
batches' advance, each what a Celery beat task does behind a broker.
"""

from __future__ import annotations

import logging
import threading
from typing import Self

from django.db import close_old_connections, connections

log = logging.getLogger(__name__)


class PeriodicThread:
    name = "periodic"

    def __init__(self, period_s: float) -> None:
        self._period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def step(self) -> None:
        """One pass; an exception is logged and the next pass comes at its time."""
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._period_s):
                close_old_connections()
                try:
                    self.step()
                except Exception:
                    log.exception("%s: a pass failed", self.name)
        finally:
            connections.close_all()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Let the pass under way finish (a half-done one would be rolled back anyway)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)
