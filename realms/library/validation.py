"""Located validation of a package tree, for an editor that checks as the author types.

Each problem becomes ``{file, line, path, message, text}``. The loader locates problems
by file and field; the line is found here: from a parse error's own message, or by
finding the field's keys, one after the other, in the file's text (best effort: a key
that also appears earlier under another parent can point a little early).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from realms.packages import PackageError, PackageWarning

_LINE_IN_MESSAGE = re.compile(r"\(line (\d+)")
_PATH_PARTS = re.compile(r"\[\d+\]|\.")


def _decoded(files: Mapping[str, bytes], name: str) -> str | None:
    try:
        return files[name].decode("utf-8")
    except (KeyError, UnicodeDecodeError):
        return None


def find_line(text: str, field: str) -> int | None:
    """The line where ``field`` (a dotted path such as ``budget.on_exhausted``) is written."""
    keys = [key for key in _PATH_PARTS.split(field) if key]
    line = None
    pos = 0
    for key in keys:
        escaped = re.escape(key)
        # A JSON key, or a YAML key at the start of a line (possibly a list item).
        pattern = re.compile(rf'"{escaped}"\s*:|^[ \t]*(?:-[ \t]+)?{escaped}[ \t]*:', re.M)
        match = pattern.search(text, pos)
        if match is None:
            break
        line = text.count("\n", 0, match.start()) + 1
        pos = match.end()
    return line


def locate(problem: PackageError | PackageWarning, files: Mapping[str, bytes]) -> dict[str, Any]:
    if isinstance(problem, PackageError):
        message = problem.message or f"expected {problem.expected}; got {problem.found}"
    else:
        message = problem.message
    line: int | None = None
    found = _LINE_IN_MESSAGE.search(message)
    if found is not None:
        line = int(found.group(1))
    elif problem.field:
        text = _decoded(files, problem.file)
        if text is not None:
            line = find_line(text, problem.field)
    return {
        "file": problem.file,
        "line": line,
        "path": problem.field,
        "message": message,
        "text": str(problem),
    }
