"""What a value must be before the Chronicle keeps it, checked in one place.

The Chronicle is append-only: a value that cannot be stored (a NUL, which PostgreSQL
refuses in text and JSON; an unpaired surrogate, which has no UTF-8 form), cannot be
read back as JSON (NaN, Infinity), or is too deep or too large to render, can never be
repaired later and would break every page of its realm. So:

* :func:`check_value` refuses such a value with a located message; every boundary that
  can say no (the realmtools tools, the HTTP API) calls it first;
* :func:`make_storable` is for what cannot be refused after the fact (a bus message the
  homeserver already accepted, a trace line already written): it returns a copy with
  the bad characters escaped as visible text and says where, so nothing is lost.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

MAX_DEPTH = 32
"""Nesting of objects and lists, counting the outermost as 1."""
MAX_VALUE_BYTES = 64 * 1024
"""The UTF-8 JSON encoding of one value an agent writes (all of a tool call's arguments)."""
MAX_INTEGER = 2**63 - 1
MAX_TS_MS = 253_402_300_799_999
"""The last millisecond of the year 9999: later stamps cannot be shown as dates."""

_BAD_CHARS = re.compile("[\x00\ud800-\udfff]")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class BadValue(ValueError):
    """A value that the Chronicle cannot keep; ``where`` names the part at fault."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: {problem}")
        self.where = where
        self.problem = problem


def _child(where: str, key: object) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    text = str(key)
    return f"{where}.{text}" if _IDENTIFIER.match(text) else f"{where}[{_escape(text)!r}]"


def char_problem(text: str) -> str | None:
    """What makes ``text`` unstorable (a NUL, an unpaired surrogate), or None."""
    found = _BAD_CHARS.search(text)
    if found is None:
        return None
    char = found.group()
    if char == "\x00":
        return f"contains a NUL character (at offset {found.start()})"
    return f"contains an unpaired surrogate U+{ord(char):04X} (at offset {found.start()})"


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool | str):
        return char_problem(value) if isinstance(value, str) else None
    if isinstance(value, int):
        if abs(value) > MAX_INTEGER:
            return "a number beyond ±2**63 - 1"
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    return f"a {type(value).__name__} is not a JSON value"


def check_value(
    value: Any,
    where: str = "value",
    *,
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = MAX_VALUE_BYTES,
) -> None:
    """Raise :class:`BadValue` unless ``value`` is JSON the Chronicle can keep as it is.

    The walk is iterative, so a value nested a million deep is refused, not a crash.
    """
    stack: list[tuple[str, Any, int]] = [(where, value, 1)]
    while stack:
        path, item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise BadValue(path, f"nested deeper than {max_depth} levels")
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, child in pairs:
                if isinstance(item, dict):
                    if not isinstance(key, str):
                        raise BadValue(path, f"a key must be a string; got {key!r}")
                    problem = char_problem(key)
                    if problem is not None:
                        raise BadValue(_child(path, key), f"its name {problem}")
                stack.append((_child(path, key), child, depth + 1))
            continue
        problem = _scalar_problem(item)
        if problem is not None:
            raise BadValue(path, problem)
    if max_bytes is not None:
        size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
        if size > max_bytes:
            raise BadValue(where, f"is {size} bytes as JSON; at most {max_bytes} are kept")


def storable_ts_ms(value: Any) -> int | None:
    """``value`` if it is a millisecond timestamp between 1970 and 9999, else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TS_MS:
        return value
    return None


def _escape(text: str) -> str:
    return _BAD_CHARS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def make_storable(value: Any, where: str = "value") -> tuple[Any, list[str]]:
    """A copy of ``value`` the Chronicle can keep, and the places that had to change.

    NULs and unpaired surrogates become the visible text ``\\u0000`` / ``\\ud800``;
    NaN and the infinities become the strings ``"NaN"``, ``"Infinity"``; integers
    past 64 bits become their digits; parts nested deeper than :data:`MAX_DEPTH`
    become their JSON text. Nothing is dropped. A value that is not JSON at all (a
    ``Decimal``, a ``datetime``) is left as it is, for the encoder to refuse: that is
    a bug in the caller, not something an agent wrote.
    """
    changed: list[str] = []

    def walk(item: Any, path: str, depth: int) -> Any:
        if isinstance(item, str):
            fixed = _escape(item)
            if fixed != item:
                changed.append(path)
            return fixed
        if item is None or isinstance(item, bool):
            return item
        if isinstance(item, int):
            if abs(item) > MAX_INTEGER:
                changed.append(path)
                return str(item)
            return item
        if isinstance(item, float):
            if math.isfinite(item):
                return item
            changed.append(path)
            return "NaN" if math.isnan(item) else ("Infinity" if item > 0 else "-Infinity")
        if isinstance(item, dict | list | tuple):
            if depth > MAX_DEPTH:
                changed.append(path)
                try:
                    return _escape(json.dumps(item, default=repr, check_circular=False))
                except RecursionError:  # only a value built in memory gets this deep
                    return "(nested too deep to keep as text)"
            if isinstance(item, dict):
                out: dict[str, Any] = {}
                for key, child in item.items():
                    name = _escape(str(key))
                    if name != key:
                        changed.append(_child(path, name))
                    out[name] = walk(child, _child(path, name), depth + 1)
                return out
            return [walk(child, _child(path, i), depth + 1) for i, child in enumerate(item)]
        # Not JSON at all: a bug in the caller, left for the JSON encoder to raise.
        return item

    return walk(value, where, 1), changed
