"""A throw-away BEARPIT_HOME for one benchmark run, removed when the run ends.

A home named in the environment is the user's: it is used and kept (name one to read the
homeserver's log or the Chronicle after a run).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile


def throwaway_home() -> str:
    """BEARPIT_HOME for this run: the environment's, else a new folder removed at exit."""
    if os.environ.get("BEARPIT_HOME"):
        return os.environ["BEARPIT_HOME"]
    home = tempfile.mkdtemp(prefix="bearpit-bench-")
    os.environ["BEARPIT_HOME"] = home
    atexit.register(_remove, home, os.getpid())
    return home


def _remove(home: str, owner: int) -> None:
    # A forked child runs its parent's exit handlers only if it exits normally; the home
    # is the run's, so only the process that made it removes it.
    if os.getpid() == owner:
        shutil.rmtree(home, ignore_errors=True)
