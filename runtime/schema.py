"""Tool-argument validation for the JSON Schema that tool schemas use, without jsonschema.

jsonschema (with referencing, rpds, attrs and its bundled meta-schemas) adds about 5 MB to an
agent's process at its first tool call. Tool schemas use a small part of Draft 2020-12, so
that part is checked here, keyword for keyword as jsonschema's ``Draft202012Validator`` does
and with its messages. A schema using anything else (``$ref``, ``patternProperties``, ``if``
...) or a malformed keyword returns None, and the caller asks jsonschema itself: no schema is
ever checked less strictly than before. Every keyword of a visited schema is looked at (none
is skipped after a first error), so a neighbour such as ``patternProperties`` or
``prefixItems`` always sends the whole schema to jsonschema.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

Path = tuple[str | int, ...]
Found = Iterator[tuple[Path, str]]

# Keywords that only annotate (format too: jsonschema checks it only with a format checker,
# which the runtime never passed).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "format",
        "$schema",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "contentMediaType",
        "contentEncoding",
    }
)
_TYPES = frozenset({"null", "boolean", "object", "array", "number", "integer", "string"})


class Unsupported(Exception):
    """The schema needs jsonschema."""


def errors(schema: Any, instance: Any) -> list[tuple[Path, str]] | None:
    """(instance path, message) for every violation, or None if the schema is not covered."""
    try:
        return list(_check(schema, instance, ()))
    except (Unsupported, TypeError, ValueError, re.error):
        return None


def _is(instance: Any, kind: Any) -> bool:
    if kind not in _TYPES:
        raise Unsupported(kind)
    if kind == "integer":
        if isinstance(instance, float):
            return instance.is_integer()
        return isinstance(instance, int) and not isinstance(instance, bool)
    if kind == "number":
        return isinstance(instance, (int, float)) and not isinstance(instance, bool)
    return isinstance(
        instance,
        {"null": type(None), "boolean": bool, "object": dict, "array": list, "string": str}[kind],
    )


def _equal(a: Any, b: Any) -> bool:
    # As jsonschema compares: true is not 1, containers compare element by element.
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _number(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Unsupported("a bound that is not a number")
    return value


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unsupported("a length that is not an integer")
    return value


def _check(schema: Any, instance: Any, at: Path) -> Found:
    if schema is True:
        return
    if schema is False:
        yield at, f"False schema does not allow {instance!r}"
        return
    if not isinstance(schema, dict):
        raise Unsupported("a schema that is not an object")
    for key, value in schema.items():
        if key not in _ANNOTATIONS:
            yield from _keyword(key, value, schema, instance, at)


def _keyword(key: str, value: Any, schema: dict[str, Any], instance: Any, at: Path) -> Found:
    if key == "type":
        kinds = value if isinstance(value, list) else [value]
        if not any(_is(instance, kind) for kind in kinds):
            yield at, f"{instance!r} is not of type {', '.join(repr(k) for k in kinds)}"
    elif key == "properties":
        if not isinstance(value, dict):
            raise Unsupported(key)
        if isinstance(instance, dict):
            for name, sub in value.items():
                if name in instance:
                    yield from _check(sub, instance[name], (*at, name))
    elif key == "required":
        if not isinstance(value, list):
            raise Unsupported(key)
        if isinstance(instance, dict):
            for name in value:
                if name not in instance:
                    yield at, f"{name!r} is a required property"
    elif key == "additionalProperties":
        if isinstance(instance, dict):
            known = schema.get("properties", {})
            extras = [name for name in instance if name not in known]
            if isinstance(value, dict):
                for name in extras:
                    yield from _check(value, instance[name], (*at, name))
            elif value is False and extras:
                names = sorted(set(extras), key=str)
                verb = "was" if len(names) == 1 else "were"
                listed = ", ".join(repr(n) for n in names)
                yield at, f"Additional properties are not allowed ({listed} {verb} unexpected)"
            elif value is not True and value is not False:
                raise Unsupported(key)
    elif key == "items":
        if not isinstance(value, (dict, bool)):
            raise Unsupported(key)
        if isinstance(instance, list):
            if value is False and instance:
                rest = instance if len(instance) != 1 else instance[0]
                yield at, f"Expected at most 0 items but found {len(instance)} extra: {rest!r}"
            elif value is not False:
                for index, item in enumerate(instance):
                    yield from _check(value, item, (*at, index))
    elif key == "enum":
        if not isinstance(value, list):
            raise Unsupported(key)
        if all(not _equal(each, instance) for each in value):
            yield at, f"{instance!r} is not one of {value!r}"
    elif key == "const":
        if not _equal(instance, value):
            yield at, f"{value!r} was expected"
    elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        yield from _bound(key, _number(value), instance, at)
    elif key in ("minLength", "maxLength", "minItems", "maxItems"):
        kind = str if key.endswith("Length") else list
        if isinstance(instance, kind):
            limit = _count(value)
            if key.startswith("min") and len(instance) < limit:
                yield at, f"{instance!r} {'should be non-empty' if limit == 1 else 'is too short'}"
            elif key.startswith("max") and len(instance) > limit:
                said = "is expected to be empty" if limit == 0 else "is too long"
                yield at, f"{instance!r} {said}"
    elif key == "pattern":
        if not isinstance(value, str):
            raise Unsupported(key)
        if isinstance(instance, str) and not re.search(value, instance):
            yield at, f"{instance!r} does not match {value!r}"
    elif key in ("anyOf", "allOf"):
        if not isinstance(value, list) or not value:
            raise Unsupported(key)
        found = [list(_check(sub, instance, at)) for sub in value]
        if key == "allOf":
            for each in found:
                yield from each
        elif all(found):
            yield at, f"{instance!r} is not valid under any of the given schemas"
    else:
        raise Unsupported(key)


def _bound(key: str, limit: Any, instance: Any, at: Path) -> Found:
    if isinstance(instance, bool) or not isinstance(instance, (int, float)):
        return
    if key == "minimum" and instance < limit:
        yield at, f"{instance!r} is less than the minimum of {limit!r}"
    elif key == "maximum" and instance > limit:
        yield at, f"{instance!r} is greater than the maximum of {limit!r}"
    elif key == "exclusiveMinimum" and instance <= limit:
        yield at, f"{instance!r} is less than or equal to the minimum of {limit!r}"
    elif key == "exclusiveMaximum" and instance >= limit:
        yield at, f"{instance!r} is greater than or equal to the maximum of {limit!r}"
