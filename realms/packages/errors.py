"""Located problems found while loading a package.

Every problem names the file (relative to the package root), the dotted field path inside
that file, what was expected and what was found, so an author can fix it without guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

_FOUND_LIMIT = 80


def describe_value(value: Any) -> str:
    """A short, readable rendering of a value an author wrote (for "got …")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, str | int | float):
        try:
            text = json.dumps(value, ensure_ascii=False)
        except ValueError:
            text = repr(value)
        if len(text) > _FOUND_LIMIT:
            text = text[: _FOUND_LIMIT - 2] + "…" + ('"' if isinstance(value, str) else "")
        return text
    return type(value).__name__


def join_path(*parts: str | int) -> str:
    """Dotted field path: names joined with dots, list indexes as ``[i]``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "":
            continue
        elif out:
            out += f".{part}"
        else:
            out = str(part)
    return out


@dataclass(frozen=True)
class PackageError:
    """One thing wrong with a package.

    ``file`` is relative to the package root (``project.json``, ``agents/pong/agent.json``);
    ``field`` is the dotted path inside that file (empty when the file itself is the problem).
    Either ``message`` says it all ("required field missing", "unknown field") or the problem
    reads "expected ``expected``; got ``found``".
    """

    file: str
    field: str = ""
    expected: str = ""
    found: str = ""
    message: str = ""

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.field) if part)
        body = self.message or f"expected {self.expected}; got {self.found}"
        return f"{where}: {body}" if where else body

    def as_dict(self) -> dict[str, str]:
        return {
            "file": self.file,
            "field": self.field,
            "expected": self.expected,
            "found": self.found,
            "message": self.message,
            "text": str(self),
        }


@dataclass(frozen=True)
class PackageWarning:
    """Something the loader accepted but ignored or reinterpreted."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.field) if part)
        return f"{where}: {self.message}" if where else self.message

    def as_dict(self) -> dict[str, str]:
        return {"file": self.file, "field": self.field, "message": self.message, "text": str(self)}


def expected(file: str, field: str, what: str, value: Any) -> PackageError:
    """Shorthand for the common "expected X; got <value>" problem."""
    return PackageError(file=file, field=field, expected=what, found=describe_value(value))


def problem(file: str, field: str, message: str) -> PackageError:
    """Shorthand for a problem whose message says it all."""
    return PackageError(file=file, field=field, message=message)
