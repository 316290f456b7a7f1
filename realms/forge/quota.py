"""Disk caps: a directory backed by its own small ext4 image, loop-mounted.

Per-file limits (RLIMIT_FSIZE) alone cannot stop an agent filling the disk with many
files; a filesystem of a fixed size can. Where loop mounts are impossible (not root,
no loop devices) the directory stays a plain directory and only RLIMIT_FSIZE holds.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)


class QuotaError(RuntimeError):
    pass


def loop_mounts_possible() -> bool:
    return (
        os.geteuid() == 0
        and shutil.which("mkfs.ext4") is not None
        and shutil.which("mount") is not None
        and Path("/dev/loop-control").exists()
    )


def is_mounted(path: Path) -> bool:
    return os.path.ismount(path)


def mount_capped(image: Path, target: Path, size_bytes: int, uid: int, gid: int, mode: int) -> bool:
    """Make ``target`` a filesystem of ``size_bytes``; True if capped, False if plain."""
    target.mkdir(parents=True, exist_ok=True)
    if is_mounted(target):
        return True
    if not loop_mounts_possible():
        log.warning("disk cap for %s: loop mounts unavailable; per-file limit only", target)
        _own(target, uid, gid, mode)
        return False
    if not image.exists():
        with image.open("wb") as handle:
            handle.truncate(size_bytes)
        image.chmod(0o600)
        _run(
            [
                "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
                "-E", f"root_owner={uid}:{gid}", str(image),
            ]
        )  # fmt: skip
    _run(["mount", "-o", "loop,nosuid,nodev,noatime", str(image), str(target)])
    lost = target / "lost+found"
    if lost.is_dir():
        with contextlib.suppress(OSError):
            lost.rmdir()
    _own(target, uid, gid, mode)
    return True


def unmount(target: Path) -> None:
    if not is_mounted(target):
        return
    result = subprocess.run(["umount", str(target)], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        # A process that has not yet died may hold it open: detach now, free when idle.
        subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


def discard(image: Path, target: Path) -> None:
    """Unmount ``target``, then delete it and its image: whatever an agent left there
    (undeclared files, transcripts, its birth config) is gone from the host.

    A lazily detached mount is no longer a mount point, so only its empty directory is
    removed here; its loop device lets go of the unlinked image once idle."""
    unmount(target)
    if is_mounted(target):
        raise QuotaError(f"{target}: still mounted after umount; its image is kept")
    if target.is_symlink():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)  # never follows the symlinks agents made inside
    image.unlink(missing_ok=True)


def _own(target: Path, uid: int, gid: int, mode: int) -> None:
    if os.geteuid() == 0:
        os.chown(target, uid, gid)
    target.chmod(mode)


def _run(argv: list[str]) -> None:
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise QuotaError(f"{argv[0]} failed ({result.returncode}): {result.stderr.strip()}")
