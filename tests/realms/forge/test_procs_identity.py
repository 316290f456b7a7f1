"""A process named in a row (``host:pid:start``) is judged alive or gone from /proc."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from realms.forge import procs


def test_this_process_is_named_by_host_pid_and_start() -> None:
    host, pid, started = procs.identity().split(":")
    assert (host, int(pid), int(started)) == (
        socket.gethostname(),
        os.getpid(),
        procs.start_time(os.getpid()),
    )
    assert procs.identity_alive(procs.identity()) is True


def test_a_process_that_exited_is_gone_and_a_reused_pid_is_not_it() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    started = procs.start_time(child.pid)
    name = f"{socket.gethostname()}:{child.pid}:{started}"
    assert procs.identity_alive(name) is True
    assert started is not None
    # The same pid with another start time is another process.
    assert procs.identity_alive(f"{socket.gethostname()}:{child.pid}:{started + 1}") is False
    child.kill()
    child.wait(5)
    assert procs.identity_alive(name) is False


def test_a_name_without_a_start_is_alive_while_its_pid_is() -> None:
    host = socket.gethostname()
    assert procs.identity_alive(f"{host}:{os.getpid()}") is True
    assert procs.identity_alive(f"{host}:{os.getpid()}:?") is True
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(5)
    assert procs.identity_alive(f"{host}:{gone.pid}") is False


def test_another_hosts_process_or_no_process_is_not_judged() -> None:
    assert procs.identity_alive(f"not-{socket.gethostname()}:1:1") is None
    assert procs.identity_alive("") is None
    assert procs.identity_alive(f"{socket.gethostname()}:abc:1") is None
