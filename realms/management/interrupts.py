"""SIGINT and SIGTERM for the commands that run a realm in the foreground.

They end the realm the way Ctrl-C does: concluded, reported, cleaned up. Only the first
signal interrupts; later ones (``timeout``, process managers and ``uv run`` deliver more
than one) must not break off the clean-up the first one started.
"""

from __future__ import annotations

import signal


class Interrupts:
    def __init__(self) -> None:
        self.received = 0

    def install(self) -> Interrupts:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._handle)
        return self

    def hold(self) -> None:
        """From now on signals interrupt nothing: the realm is over, and what is left
        (the report, stopping the platform) must run to its end."""
        self.received = max(self.received, 1)

    def _handle(self, signum: int, frame: object) -> None:
        self.received += 1
        if self.received == 1:
            raise KeyboardInterrupt
