"""The server's batch driver for ``pit_serve``: a thread that moves every batch the API
or the console started along, once a tick period, with nobody reading it.

What Celery beat's ``batches.advance_all`` does behind a broker, in a thread of the
server process (its realms are provisioned by the server's own provisioning thread and
ticked by its ticker). A pass only queues runs and writes reports, so it never holds up
a realm's tick; a batch left running when the server stops goes on at the next start.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings

from bearpit.periodic import PeriodicThread
from realms.batch.service import advance_background_batches


class BatchDriver(PeriodicThread):
    name = "batch-driver"

    def __init__(self, period_s: float, say: Callable[[str], None]) -> None:
        super().__init__(period_s)
        self._say = say
        self._finished: set[str] = set()

    def step(self) -> None:
        self.advance()

    def advance(self) -> None:
        states = advance_background_batches(settings.BEARPIT_MAX_ACTIVE_REALMS)
        for batch_id, state in sorted(states.items()):
            if state == "finished" and batch_id not in self._finished:
                self._finished.add(batch_id)
                self._say(f"batch finished: {batch_id}")
