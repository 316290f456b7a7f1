"""Reading and writing package trees: folders and zips, safely and byte for byte.

A package tree is a mapping of relative POSIX paths to file bytes. Reading refuses
anything that could escape the package (absolute paths, ``..``, symlinks) and
anything over the library's limits, so an import either takes the whole package or
changes nothing.
"""

from __future__ import annotations

import io
import lzma
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

MAX_FILES = 500
MAX_TOTAL_BYTES = 5 * 1024 * 1024
MAX_PATH_CHARS = 1024  # ScenarioFile.path
MAX_NAME_BYTES = 255  # one path component, as every common filesystem allows
# Methods zipfile can inflate here; anything else (deflate64, PPMd, …) is named and refused.
READABLE_METHODS = {
    zipfile.ZIP_STORED: "store",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
# What a damaged archive or member raises while it is read: a bad CRC or header
# (BadZipFile), a corrupt or cut deflate stream (zlib.error, EOFError), a bad bzip2 or
# lzma stream (OSError, ValueError, lzma.LZMAError), a method or flag zipfile cannot
# honour (NotImplementedError, RuntimeError).
_READ_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    EOFError,
    OSError,
    ValueError,
    NotImplementedError,
    RuntimeError,
)
# A fixed timestamp keeps exported zips identical from one export to the next.
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)
SKIPPED_DIRS = frozenset({".git", "__pycache__", ".DS_Store"})


class PackageTreeError(Exception):
    """The tree cannot be taken into the library; nothing was changed."""


def _check_name(name: str, where: str) -> str:
    """A member name the library can store and write to disk, or a located refusal."""
    if "\x00" in name:
        raise PackageTreeError(f"{where}: {_escaped(name)}: the name contains a NUL character")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in name):
        raise PackageTreeError(f"{where}: {_escaped(name)}: the name contains a control character")
    path = _check_relative(name, where)
    if len(path) > MAX_PATH_CHARS:
        raise PackageTreeError(
            f"{where}: {path[:60]}…: the path is longer than {MAX_PATH_CHARS} characters"
        )
    for part in PurePosixPath(path).parts:
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise PackageTreeError(
                f"{where}: {path[:60]}…: a name in the path is longer than {MAX_NAME_BYTES} bytes"
            )
    return path


def _escaped(name: str) -> str:
    return repr(name)[1:-1]


def _check_relative(name: str, where: str) -> str:
    parts = PurePosixPath(name).parts
    # An empty name has no parts at all: refused here, before its first part is read.
    if not parts or "\\" in name or name.startswith("/") or ":" in parts[0]:
        raise PackageTreeError(f"{where}: {name!r}: expected a relative path inside the package")
    if any(part in ("..", ".", "") for part in parts):
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


def check_path(name: str, *, where: str) -> str:
    """A relative path inside a tree, normalised, or a located refusal."""
    return _check_name(name, where)


def check_tree(files: Mapping[str, bytes], *, where: str) -> dict[str, bytes]:
    """A tree sent as a mapping (an API body, an upload), held to the same rules as a zip."""
    budget = _Budget(where)
    out: dict[str, bytes] = {}
    for name, content in files.items():
        path = _check_name(name, where)
        if any(part in SKIPPED_DIRS for part in PurePosixPath(path).parts):
            continue
        budget.take(len(content))
        if path in out:
            raise PackageTreeError(f"{where}: {path}: appears twice")
        out[path] = content
    if not out:
        raise PackageTreeError(f"{where}: holds no files")
    _check_shape(out, where)
    return out


def strip_common_folder(files: dict[str, bytes]) -> tuple[str | None, dict[str, bytes]]:
    """The single top-level folder holding everything (if any), and the tree inside it."""
    tops = {name.split("/", 1)[0] for name in files}
    if len(tops) == 1 and all("/" in name for name in files):
        return next(iter(tops)), _strip_common_folder(files)
    return None, files


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


def _open_zip(data: bytes, where: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except UnicodeDecodeError:
        raise PackageTreeError(
            f"{where}: a member's name is marked UTF-8 but is not valid UTF-8"
        ) from None
    except _READ_ERRORS:
        raise PackageTreeError(f"{where}: not a zip archive") from None


def _check_member(info: zipfile.ZipInfo, name: str, where: str) -> None:
    if info.flag_bits & 0x1:
        raise PackageTreeError(f"{where}: {name}: the member is encrypted; send it unencrypted")
    if info.compress_type not in READABLE_METHODS:
        known = ", ".join(READABLE_METHODS.values())
        raise PackageTreeError(
            f"{where}: {name}: compression method {info.compress_type} is not supported "
            f"(use {known})"
        )


def _check_shape(files: Mapping[str, bytes], where: str) -> None:
    """No name may be both a file and a folder of other files."""
    for name in files:
        parent = PurePosixPath(name).parent
        while str(parent) != ".":
            if str(parent) in files:
                raise PackageTreeError(
                    f"{where}: {parent}: is both a file and a folder holding {name}"
                )
            parent = parent.parent


def read_zip(data: bytes, *, where: str = "zip") -> dict[str, bytes]:
    """The files of a zip; a single top-level folder holding everything is stripped.

    Every member is checked before it is read (name, encryption, method) and read
    whole within the size budget; a damaged one is refused by name, so an import
    either takes every file or changes nothing.
    """
    budget = _Budget(where)
    files: dict[str, bytes] = {}
    with _open_zip(data, where) as archive:
        for info in archive.infolist():
            # zipfile cuts a name at its first NUL; the original tells what was sent.
            if "\x00" in info.orig_filename:
                _check_name(info.orig_filename, where)
            if info.is_dir():
                _check_name(info.filename.rstrip("/"), where)
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                raise PackageTreeError(f"{where}: {info.filename}: symlinks are not allowed")
            name = _check_name(info.filename, where)
            if any(part in SKIPPED_DIRS for part in PurePosixPath(name).parts):
                continue
            _check_member(info, name, where)
            # Read at most one byte past what is allowed, whatever the header claims, so a
            # zip bomb cannot make us inflate more than the library would keep.
            try:
                with archive.open(info) as member:
                    content = member.read(MAX_TOTAL_BYTES - budget.bytes + 1)
            except _READ_ERRORS as exc:
                raise PackageTreeError(
                    f"{where}: {name}: the member is damaged and cannot be read ({exc})"
                ) from None
            budget.take(len(content))
            if name in files:
                raise PackageTreeError(f"{where}: {name}: appears twice")
            files[name] = content
    if not files:
        raise PackageTreeError(f"{where}: the archive holds no files")
    _check_shape(files, where)
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
