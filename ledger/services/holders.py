"""Which gateway process holds a key's reservations, and whether it still can settle them.

A reservation lives only in the process that made it: the call it guards is answered,
metered and settled there. A gateway killed mid-call (``kill -9``, a lost host) leaves its
reservations on the keys for good, and the realm's teardown would wait for calls nobody
will ever settle. Each reservation therefore names its holder (``host:pid:start``, the
start time telling a reused pid apart), and a holder of this host whose process is gone
is known dead. One of another host is never judged from here: its gateway may be alive.
"""

from __future__ import annotations

import os
import socket

from realms.forge import procs

_MINE: tuple[int, str] | None = None


def this_process() -> str:
    """This process as a holder (computed once per process: a fork gets its own)."""
    global _MINE
    pid = os.getpid()
    if _MINE is None or _MINE[0] != pid:
        started = procs.start_time(pid)
        _MINE = (pid, f"{socket.gethostname()}:{pid}:{'?' if started is None else started}")
    return _MINE[1]


def is_gone(holder: str) -> bool:
    """True only when ``holder`` names a process of this host that no longer runs."""
    host, _, started = holder.rpartition(":")
    host, _, pid = host.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    # A holder whose start time was unreadable is alive for as long as its pid is.
    return not procs.is_same_process(int(pid), int(started) if started.isdigit() else None)
