"""Checking an edited package without saving it: every problem the loader finds, with the
line of its file it points at where that can be found.

A parse error names its line. A field path (``budget.on_exhausted``) is found by looking
for its keys in order in the file's text; that is a best effort, good for the manifests
people write by hand, and a problem whose line cannot be found is still listed.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from realms.library import files as trees
from realms.packages import load_package
from realms.packages.errors import PackageError

_PARSE_LINE = re.compile(r"\(line (\d+)\)")
_PATH_PART = re.compile(r"[^.\[\]]+")


@dataclass(frozen=True)
class Located:
    file: str
    line: int | None
    path: str
    message: str

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _key_line(text: str, field_path: str, suffix: str) -> int | None:
    """The line where the last key of ``field_path`` is written, searching key after key."""
    keys = [k for k in _PATH_PART.findall(field_path) if not k.isdigit()]
    if not keys:
        return None
    position = 0
    found = None
    for key in keys:
        if suffix == ".json":
            pattern = re.compile(r'"' + re.escape(key) + r'"')
        else:
            pattern = re.compile(r"(?m)^\s*(?:-\s*)?" + re.escape(key) + r"\s*:")
        match = pattern.search(text, position)
        if match is None:
            break
        found = match
        position = match.end()
    if found is None:
        return None
    return text.count("\n", 0, found.start()) + 1


def line_of(error: PackageError, texts: Mapping[str, str]) -> int | None:
    text = texts.get(error.file)
    if text is None:
        return None
    if not error.field:
        parsed = _PARSE_LINE.search(error.message)
        return int(parsed.group(1)) if parsed else None
    return _key_line(text, error.field, Path(error.file).suffix.lower())


def check_files(files: Mapping[str, bytes]) -> list[Located]:
    """Load ``files`` as a package in a scratch folder; nothing is stored."""
    with tempfile.TemporaryDirectory(prefix="bearpit-check-") as tmp:
        scratch = Path(tmp) / "package"
        try:
            root = trees.write_folder(files, scratch)
        except trees.PackageTreeError as exc:
            # The scratch folder is ours, not the author's: name the package instead.
            message = str(exc).replace(str(scratch), "the package")
            return [Located(file="", line=None, path="", message=message)]
        result = load_package(root)
    texts: dict[str, str] = {}
    for name, content in files.items():
        try:
            texts[name] = content.decode("utf-8")
        except UnicodeDecodeError:
            continue
    return [
        Located(
            file=error.file,
            line=line_of(error, texts),
            path=error.field,
            message=error.message or f"expected {error.expected}; got {error.found}",
        )
        for error in result.errors
    ]
