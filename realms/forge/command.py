"""The command that runs the agent runtime in a sandbox.

Every backend that runs the host's interpreter (bwrap, process) uses :func:`runtime_argv`;
a container runs the runtime installed in its image and keeps only the runtime's own
arguments (:func:`runtime_args_of`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from realms.forge import layout
from realms.forge.bytecode import PYCACHE_DIR

# The sandbox sees the project's code directory only as a bare mount point that its
# uid may traverse but not list, and Python's path finder lists a sys.path entry
# before importing from it. So the runtime package is loaded from its own
# (listable) directory explicitly, then run as ``python -m runtime`` would.
#
# Sandboxes may not write bytecode, so without help every agent would compile its whole
# import closure from source at each start (half of its start-up CPU). The host compiles
# it once into ``run/pycache`` (realms/forge/bytecode.py), which every sandbox sees
# under its sockets directory; the bootstrap points Python's pycache prefix there.
# Stale or missing entries are simply compiled again in memory, as before.
#
# The interpreter runs isolated (-I): the agent can write its cwd (its home) and the
# user site under it, and ``python -c`` would put the cwd first on sys.path, so a
# module planted there by run_code would shadow the runtime's own imports. -I also
# ignores PYTHON* variables, so -u and -B say what those did.
_PYTHON_FLAGS = ("-I", "-B", "-u")
_BOOTSTRAP = (
    "import importlib.util, os, runpy, sys\n"
    "cache = os.path.join(os.environ.get('BEARPIT_SOCKETS') or '/nonexistent', "
    f"{PYCACHE_DIR!r})\n"
    "if os.path.isdir(cache):\n"
    "    sys.pycache_prefix = cache\n"
    "pkg = sys.argv[1]\n"
    "spec = importlib.util.spec_from_file_location("
    "'runtime', pkg + '/__init__.py', submodule_search_locations=[pkg])\n"
    "mod = importlib.util.module_from_spec(spec)\n"
    "sys.modules['runtime'] = mod\n"
    "spec.loader.exec_module(mod)\n"
    "sys.argv = ['runtime', *sys.argv[2:]]\n"
    "runpy.run_module('runtime', run_name='__main__', alter_sys=True)\n"
)


def runtime_argv(*, await_birth_s: float | None = None) -> list[str]:
    """``<venv python> -m runtime [--await-birth S] <birth.json>``, robust to an
    unlistable code root. With ``await_birth_s`` the runtime loads its code, then waits
    for the platform to deliver the birth config (realms/forge/services.deliver_birth)."""
    import runtime

    package = str(Path(runtime.__file__).resolve().parent)
    birth = f"{layout.SANDBOX_HOME}/{layout.BIRTH_DIR_NAME}/{layout.BIRTH_FILE_NAME}"
    wait = ["--await-birth", f"{await_birth_s:g}"] if await_birth_s is not None else []
    return [sys.executable, *_PYTHON_FLAGS, "-c", _BOOTSTRAP, package, *wait, birth]


def runtime_args_of(argv: Sequence[str]) -> list[str] | None:
    """The runtime's own arguments (``[--await-birth S] <birth.json>``) when ``argv`` is
    the :func:`runtime_argv` form, else None. A container runs the runtime from its
    image, so it keeps only these and drops the host's interpreter and package path."""
    flags = len(_PYTHON_FLAGS)
    if (
        len(argv) >= flags + 4
        and tuple(argv[1 : flags + 1]) == _PYTHON_FLAGS
        and argv[flags + 1] == "-c"
        and argv[flags + 2] == _BOOTSTRAP
    ):
        return list(argv[flags + 4 :])
    return None
