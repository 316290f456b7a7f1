"""Reading package files without ever leaving the package.

Packages are shared artefacts (zips, git repositories, uploads) and are read on the host, so a
symlink or a ``..`` in a package must never make the loader read a host file. Every read goes
through here: symlinks are refused, paths must resolve inside the package root, files larger than
1 MB and files that are not UTF-8 text are skipped and reported.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 64  # nesting of a manifest document; real manifests stay below 12
MAX_WALK_FILES = 500  # files under one resources/ or skills/ folder
MANIFEST_SUFFIXES = (".json", ".yaml", ".yml")
# No database keeps a NUL (PostgreSQL refuses it in any text) or an unpaired surrogate
# (it has no UTF-8 form), and a loaded package ends up in the database.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


class FileProblem(Exception):
    """A file cannot be used; the message says why, in the author's terms."""


@dataclass
class TextFiles:
    """Text files found under a folder, and the ones that were skipped (path → reason)."""

    files: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def contained(path: Path, root: Path) -> bool:
    """True when ``path`` resolves to a location inside ``root``."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return False


def find_manifest(folder: Path, stem: str) -> Path | None:
    """``<stem>.json``, ``.yaml`` or ``.yml`` in ``folder``, in that order of preference."""
    for suffix in MANIFEST_SUFFIXES:
        candidate = folder / f"{stem}{suffix}"
        if os.path.lexists(candidate):
            return candidate
    return None


def _reject_constant(name: str) -> Any:
    raise FileProblem(f"{name} is not a JSON number")


class _NoAliasLoader(yaml.SafeLoader):
    """Safe YAML without anchors and aliases: aliases are how a small file expands into a huge
    document (the "billion laughs"), and no manifest needs them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise FileProblem(f"YAML aliases are not supported (line {event.start_mark.line + 1})")
        return super().compose_node(parent, index)


def _unstorable(text: str) -> str | None:
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character, which cannot be stored"
    return f"contains an unpaired surrogate U+{ord(found.group()):04X}, which cannot be stored"


def _check_depth(doc: Any) -> None:
    """Bounded nesting, and no string (key or value) that no database can keep."""
    stack: list[tuple[Any, int, str]] = [(doc, 1, "")]
    while stack:
        node, depth, where = stack.pop()
        if depth > MAX_DEPTH:
            raise FileProblem(f"the document is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, str):
            problem = _unstorable(node)
            if problem is not None:
                raise FileProblem(f"{where or 'the document'}: {problem}")
        elif isinstance(node, dict):
            for key, value in node.items():
                path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and _unstorable(key) is not None:
                    raise FileProblem(f"{where or 'the document'}: a key {_unstorable(key)}")
                stack.append((value, depth + 1, path))
        elif isinstance(node, list):
            stack.extend((value, depth + 1, f"{where}[{i}]") for i, value in enumerate(node))


def read_text(path: Path, root: Path) -> str:
    """The UTF-8 text of a regular file inside ``root``; raises FileProblem otherwise."""
    try:
        info = path.lstat()
    except OSError as exc:
        raise FileProblem("cannot be read") from exc
    if stat.S_ISLNK(info.st_mode):
        raise FileProblem("is a symbolic link, which packages may not contain")
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem("is not a regular file")
    if not contained(path, root):
        raise FileProblem("resolves outside the package")
    if info.st_size > MAX_FILE_BYTES:
        raise FileProblem(f"is larger than 1 MB ({info.st_size} bytes)")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FileProblem("cannot be read") from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem("is not UTF-8 text") from exc
    if "\x00" in text:
        raise FileProblem(f"contains a NUL character (byte {data.index(0)}), so it is not text")
    return text


def parse_document(text: str, suffix: str) -> Any:
    """Parse manifest text as JSON or YAML (by suffix); raises FileProblem on any failure."""
    try:
        if suffix == ".json":
            doc = json.loads(text, parse_constant=_reject_constant)
        else:
            doc = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except FileProblem:
        raise
    except json.JSONDecodeError as exc:
        raise FileProblem(f"is not valid JSON: {exc.msg} (line {exc.lineno})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        reason = getattr(exc, "problem", None) or "syntax error"
        raise FileProblem(f"is not valid YAML: {reason}{where}") from exc
    except RecursionError as exc:
        raise FileProblem(f"the document is nested deeper than {MAX_DEPTH} levels") from exc
    except (ValueError, TypeError, OverflowError) as exc:
        raise FileProblem(f"cannot be parsed: {exc}") from exc
    _check_depth(doc)
    return doc


def read_document(path: Path, root: Path) -> Any:
    """Read and parse one manifest file inside ``root``."""
    return parse_document(read_text(path, root), path.suffix.lower())


def _walk(folder: Path) -> Iterator[tuple[Path, bool]]:
    """Every entry below ``folder`` in sorted order without following symlinks:
    (path, is_symlink). Directories are descended, files yielded."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.is_symlink():
            yield path, True
        elif entry.is_dir(follow_symlinks=False):
            yield from _walk(path)
        elif entry.is_file(follow_symlinks=False):
            yield path, False


def read_text_files(folder: Path, root: Path) -> TextFiles:
    """All usable text files under ``folder`` keyed by their path relative to ``folder``."""
    found = TextFiles()
    try:
        if folder.is_symlink() or not folder.is_dir() or not contained(folder, root):
            if folder.is_symlink():
                found.skipped[""] = "is a symbolic link, which packages may not contain"
            return found
    except OSError:
        return found
    for path, is_link in _walk(folder):
        rel = path.relative_to(folder).as_posix()
        if len(found.files) + len(found.skipped) >= MAX_WALK_FILES:
            found.skipped[rel] = f"more than {MAX_WALK_FILES} files in this folder"
            break
        if is_link:
            found.skipped[rel] = "is a symbolic link, which packages may not contain"
            continue
        try:
            found.files[rel] = read_text(path, root)
        except FileProblem as exc:
            found.skipped[rel] = str(exc)
    return found


def is_real_dir(path: Path) -> bool:
    """A directory that is not a symlink."""
    try:
        return path.is_dir() and not path.is_symlink()
    except OSError:
        return False
