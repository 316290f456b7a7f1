"""Capturing a realm's declared outputs (``spec.outputs`` globs) from its shared folder."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from realms.forge import layout


def capture_outputs(realm_id: str, globs: Sequence[str]) -> list[dict[str, Any]]:
    """Copy files of the shared folder matching ``globs`` to ``realms/<realm>/outputs/``.

    One entry per file, ``{path, bytes, sha256}``, and ``{path, missing: true}`` for a
    pattern that matched nothing. Symlinks and anything resolving outside the folder
    are never followed: the folder's contents were written by agents.
    """
    shared = layout.shared_dir(realm_id)
    outputs = layout.outputs_dir(realm_id)
    root = shared.resolve() if shared.exists() else shared
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for pattern in globs:
        matches = _matches(root, pattern)
        if not matches:
            entries.append({"path": pattern, "missing": True})
            continue
        for relative in matches:
            if relative in seen:
                continue
            seen.add(relative)
            entries.append(_copy(root / relative, outputs / relative, relative))
    return entries


def _matches(root: Path, pattern: str) -> list[str]:
    if not root.is_dir() or not pattern or Path(pattern).is_absolute() or ".." in pattern:
        return []
    found: list[str] = []
    for candidate in sorted(root.glob(pattern)):
        relative = candidate.relative_to(root)
        # Reject a path with a symlink anywhere in it, not only at the end.
        current = root
        safe = True
        for part in relative.parts:
            current = current / part
            if current.is_symlink():
                safe = False
                break
        if safe and candidate.is_file():
            found.append(relative.as_posix())
    return found


def _copy(source: Path, target: Path, relative: str) -> dict[str, Any]:
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {"path": relative, "missing": True}
    digest = hashlib.sha256()
    size = 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with os.fdopen(fd, "rb") as src:
        if not stat.S_ISREG(os.fstat(src.fileno()).st_mode):
            return {"path": relative, "missing": True}
        with target.open("wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                size += len(chunk)
                dst.write(chunk)
    return {"path": relative, "bytes": size, "sha256": digest.hexdigest()}
