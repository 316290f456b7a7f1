"""Bytecode for the agent runtime, compiled once by the platform for every sandbox.

Sandboxes see the interpreter, the virtual environment and the runtime read-only and may
not write bytecode, so without help every agent compiles its whole import closure at
start: about half of its start-up CPU. The platform runs ``python -m runtime --warm``
once per process with Python's pycache prefix pointed at ``BEARPIT_HOME/run/pycache``,
which every sandbox sees read-only under its sockets directory (the start-up bootstrap in
realms/forge/command.py sets the same prefix). Later runs find the files current and
cost a fraction of a second. A failure costs only speed, never correctness: a missing or
stale entry is compiled in memory, as it would be without any of this.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

from realms.forge import layout

log = logging.getLogger(__name__)

PYCACHE_DIR = "pycache"

_lock = threading.Lock()
_runs: dict[Path, threading.Event] = {}


def cache_dir() -> Path:
    return layout.sockets_dir() / PYCACHE_DIR


def start_compiling() -> threading.Event:
    """Start compiling in the background unless this process already has; the event is
    set when it is done (or has failed)."""
    cache = cache_dir()
    with _lock:
        done = _runs.get(cache)
        if done is None:
            done = _runs[cache] = threading.Event()
            threading.Thread(
                target=_compile, args=(cache, done), name="runtime-bytecode", daemon=True
            ).start()
    return done


def wait_compiled(timeout_s: float = 60.0) -> bool:
    """Compile if needed and wait for it: sandboxes started before the bytecode exists
    would each compile it themselves, for more CPU than waiting costs."""
    return start_compiling().wait(timeout_s)


def _compile(cache: Path, done: threading.Event) -> None:
    import runtime

    root = str(Path(runtime.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env |= {"PYTHONPYCACHEPREFIX": str(cache), "PYTHONPATH": root}
    try:
        cache.mkdir(parents=True, exist_ok=True)
        cache.chmod(0o755)
        result = subprocess.run(
            [sys.executable, "-m", "runtime", "--warm"],
            env=env,
            cwd=root,
            capture_output=True,
            timeout=120,
            check=False,
            umask=0o022,  # the sandboxes' uids read what this writes
        )
        if result.returncode != 0:
            log.warning("runtime bytecode not compiled: %s", result.stderr.decode()[-1000:])
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("runtime bytecode not compiled: %s", exc)
    finally:
        done.set()
