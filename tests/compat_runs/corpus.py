"""Running a reference-corpus package unchanged, with only our offline scripts added.

Each package is copied from the corpus (``BEARPIT_COMPAT_DIR``) byte for byte; the one
thing added is ``offline/``, our own scripted-provider replies for its agents. The realm
then runs as a user would run it (``run_realm``: ``pit_up`` in a subprocess, real gateway,
bus and sandboxes, the offline provider). Afterwards the copy that ran must still match the
corpus file for file, so a pass cannot come from a package we quietly edited.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from tests.e2e.test_mechanics_run import RealmRun, run_realm
from tests.fixtures.compat import COMPAT

SCRIPTS = Path(__file__).resolve().parent / "offline"
OFFLINE = "offline"


def digests(root: Path, *, skip: str | None = None) -> dict[str, str]:
    """sha256 of every file under ``root`` by relative path (``skip``: a top folder left out)."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_dir() or (skip is not None and rel.parts[0] == skip):
            continue
        out[rel.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def run_corpus_package(
    tmp_path: Path, name: str, *, timeout: float, args: Sequence[str] = (), **env: str
) -> RealmRun:
    """Run corpus package ``name`` with ``offline/`` from ``SCRIPTS/<name>`` added, and check
    that the copy it ran from differs from the corpus in nothing but that folder."""
    source, scripts = COMPAT / name, SCRIPTS / name
    assert source.is_dir(), f"{name}: not in the corpus at {COMPAT}"
    assert not (source / OFFLINE).exists(), f"{name}: the corpus already has {OFFLINE}/"
    agents = sorted(p.name for p in (source / "agents").iterdir() if p.is_dir())
    assert sorted(p.stem for p in scripts.glob("*.yaml")) == agents, f"{name}: a script per agent"
    staged = tmp_path / "staged" / name
    shutil.copytree(source, staged)
    shutil.copytree(scripts, staged / OFFLINE)
    # The referees' closing lines follow their ruling; a grace of a few seconds lets them
    # land before teardown on a loaded machine.
    env.setdefault("BEARPIT_CONCLUDE_GRACE_S", "3")
    run = run_realm(tmp_path, staged, timeout=timeout, args=args, **env)
    ran = tmp_path / name  # run_realm's own copy, the folder pit_up was given
    assert digests(ran, skip=OFFLINE) == digests(source), f"{name}: the package was changed"
    assert digests(ran / OFFLINE) == digests(scripts), f"{name}: offline/ is not ours"
    return run
