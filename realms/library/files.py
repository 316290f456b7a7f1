"""Reading and writing package trees: folders and zips, safely and byte for byte.

A package tree is a mapping of relative POSIX paths to file bytes. Reading refuses
anything that could escape the package (absolute paths, ``..``, symlinks) and
anything over the library's limits, so an import either takes the whole package or
changes nothing.
"""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

MAX_FILES = 500
MAX_TOTAL_BYTES = 5 * 1024 * 1024
# A fixed timestamp keeps exported zips identical from one export to the next.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SKIPPED_DIRS = frozenset({".git", "__pycache__", ".DS_Store"})


class PackageTreeError(Exception):
    """The tree cannot be taken into the library; nothing was changed."""


def _check_relative(name: str, where: str) -> str:
    if "\\" in name or name.startswith("/") or ":" in PurePosixPath(name).parts[0]:
        raise PackageTreeError(f"{where}: {name!r}: expected a relative path inside the package")
    parts = PurePosixPath(name).parts
    if not parts or any(part in ("..", ".", "") for part in parts):
        raise PackageTreeError(f"{where}: {name!r}: expected a relative path inside the package")
    return "/".join(parts)


class _Budget:
    def __init__(self, where: str) -> None:
        self.where = where
        self.files = 0
        self.bytes = 0

    def take(self, size: int) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES:
            raise PackageTreeError(f"{self.where}: more than {MAX_FILES} files")
        if self.bytes > MAX_TOTAL_BYTES:
            raise PackageTreeError(f"{self.where}: more than {MAX_TOTAL_BYTES // (1024 * 1024)} MB")


def read_folder(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root``; symlinks and special files are refused."""
    where = str(root)
    if not root.is_dir():
        raise PackageTreeError(f"{where}: expected a package folder")
    budget = _Budget(where)
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if any(part in SKIPPED_DIRS for part in relative.parts):
            continue
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            raise PackageTreeError(f"{where}: {relative.as_posix()}: symlinks are not allowed")
        if stat.S_ISDIR(mode):
            continue
        if not stat.S_ISREG(mode):
            raise PackageTreeError(f"{where}: {relative.as_posix()}: not a regular file")
        data = path.read_bytes()
        budget.take(len(data))
        files[relative.as_posix()] = data
    if not files:
        raise PackageTreeError(f"{where}: the folder is empty")
    return files


def read_zip(data: bytes, *, where: str = "zip") -> dict[str, bytes]:
    """The files of a zip; a single top-level folder holding everything is stripped."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise PackageTreeError(f"{where}: not a zip archive") from None
    budget = _Budget(where)
    files: dict[str, bytes] = {}
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                raise PackageTreeError(f"{where}: {info.filename}: symlinks are not allowed")
            name = _check_relative(info.filename, where)
            if any(part in SKIPPED_DIRS for part in PurePosixPath(name).parts):
                continue
            # Read at most one byte past what is allowed, whatever the header claims, so a
            # zip bomb cannot make us inflate more than the library would keep.
            with archive.open(info) as member:
                content = member.read(MAX_TOTAL_BYTES - budget.bytes + 1)
            budget.take(len(content))
            if name in files:
                raise PackageTreeError(f"{where}: {name}: appears twice")
            files[name] = content
    if not files:
        raise PackageTreeError(f"{where}: the archive holds no files")
    return _strip_common_folder(files)


def _strip_common_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        top = tops.pop()
        return {name[len(top) + 1 :]: content for name, content in files.items()}
    return files


def write_folder(files: Mapping[str, bytes], dest: Path) -> Path:
    """Write the tree into ``dest``, which must not exist or be empty."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise PackageTreeError(f"{dest}: already exists and is not an empty folder")
    for name, content in sorted(files.items()):
        target = dest.joinpath(*PurePosixPath(_check_relative(name, str(dest))).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def build_zip(files: Mapping[str, bytes], *, top: str | None = None) -> bytes:
    """A deterministic zip: sorted entries, fixed timestamps, regular-file modes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(f"{top}/{name}" if top else name, date_time=ZIP_EPOCH)
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[name])
    return buffer.getvalue()
