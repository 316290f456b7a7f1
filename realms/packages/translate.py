"""Turn pydantic's validation errors into located, author-facing problems."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from realms.packages.errors import PackageError, describe_value, join_path
from realms.packages.schema.common import PATTERN_MEANINGS

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
# Location parts pydantic adds for validators and union members, e.g. "function-before[…]".
_TAG = re.compile(
    r"^((function-(before|after|wrap|plain)|union|literal|list|dict|nullable)\[.*\]|\[key\])$"
)

_TYPE_NAMES: dict[str, str] = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_from_float": "a whole number",
    "int_parsing": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "none_required": "null",
    "string_sub_type": "a string",
}


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _expected(error: ErrorDetails) -> str | None:
    kind = error["type"]
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    if kind in _TYPE_NAMES:
        return _TYPE_NAMES[kind]
    if kind == "literal_error":
        options = _QUOTED.findall(str(ctx.get("expected", "")))
        return "one of " + ", ".join(options) if options else str(ctx.get("expected"))
    if kind == "expected":
        return str(ctx.get("expected"))
    if kind == "string_too_long":
        return f"at most {ctx.get('max_length')} characters"
    if kind == "string_too_short":
        minimum = ctx.get("min_length")
        return "a non-empty string" if minimum == 1 else f"at least {minimum} characters"
    if kind == "too_long":
        return f"at most {ctx.get('max_length')} items"
    if kind == "too_short":
        return f"at least {ctx.get('min_length')} item(s)"
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return PATTERN_MEANINGS.get(pattern, f"text matching {pattern}")
    bounds: dict[str, Callable[[Any], str]] = {
        "greater_than_equal": lambda v: f"a number of at least {_number(v)}",
        "greater_than": lambda v: f"a number greater than {_number(v)}",
        "less_than_equal": lambda v: f"a number of at most {_number(v)}",
        "less_than": lambda v: f"a number less than {_number(v)}",
    }
    if kind in bounds:
        key = {"greater_than_equal": "ge", "greater_than": "gt"}.get(kind)
        key = key or {"less_than_equal": "le", "less_than": "lt"}[kind]
        return bounds[kind](ctx.get(key))
    return None


def _found(error: ErrorDetails) -> str:
    value = error.get("input")
    kind = error["type"]
    if kind == "string_too_long" and isinstance(value, str):
        return f"{len(value)} characters"
    if kind in ("too_long", "too_short") and isinstance(value, list | dict):
        return f"{len(value)} items"
    return describe_value(value)


def _clean_loc(loc: tuple[int | str, ...]) -> tuple[int | str, ...]:
    # pydantic adds the union member or validator name to a location ("function-before[…]",
    # "list[str]", "str"); the author only knows the field names.
    return tuple(part for part in loc if not (isinstance(part, str) and _TAG.match(part)))


def translate(
    exc: ValidationError, file: str, prefix: str = "", rename: dict[str, str] | None = None
) -> list[PackageError]:
    """One PackageError per pydantic error, located under ``prefix`` in ``file``."""
    out: list[PackageError] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        loc = _clean_loc(tuple(error["loc"]))
        parts = [rename.get(str(p), p) if rename else p for p in loc]
        field = join_path(prefix, *parts)
        kind = error["type"]
        if kind == "missing":
            item = PackageError(file=file, field=field, message="required field missing")
        elif kind == "extra_forbidden":
            item = PackageError(file=file, field=field, message="unknown field")
        else:
            wanted = _expected(error)
            if wanted is None:
                item = PackageError(file=file, field=field, message=error["msg"])
            else:
                item = PackageError(file=file, field=field, expected=wanted, found=_found(error))
        text = str(item)
        if text not in seen:  # unions report one failure per member; say it once
            seen.add(text)
            out.append(item)
    return out
