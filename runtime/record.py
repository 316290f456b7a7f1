"""Strict records: dataclasses checked against their annotations, with located errors.

The birth config is the only structured input the runtime reads, and every agent pays for
its start-up imports; a general validation library cost about 40 % of the runtime's import
time. This covers what the birth config uses: ``str``, ``int``, ``float``, ``bool``,
``Literal``, ``X | None``, ``list[X]``, ``dict[str, X]`` and nested records, with
constraints given as field metadata (``ge``, ``gt``, ``lt``, ``min_length``, ``max_length``,
``pattern``). Nothing is coerced except an int where a float is expected. Unknown keys are
errors. All problems are reported at once, each with its dotted path.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from functools import cache
from typing import Any, Literal, Self, TypeVar, Union

R = TypeVar("R", bound="Record")
Problems = list[tuple[str, str]]


class RecordError(ValueError):
    """A record did not validate; ``problems`` holds (path, message) pairs."""

    def __init__(self, problems: Problems) -> None:
        self.problems = problems
        super().__init__("\n".join(f"{where or '(top level)'}: {what}" for where, what in problems))


def constraint(
    *,
    ge: float | None = None,
    gt: float | None = None,
    lt: float | None = None,
    min_length: int | None = None,
    max_length: int | None = None,
    pattern: str | None = None,
) -> dict[str, Any]:
    """Field metadata: ``field(default=..., metadata=constraint(ge=1))``."""
    found = {
        "ge": ge,
        "gt": gt,
        "lt": lt,
        "min_length": min_length,
        "max_length": max_length,
        "pattern": pattern,
    }
    return {k: v for k, v in found.items() if v is not None}


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    found = _HINTS.get(cls)
    if found is None:
        found = _HINTS[cls] = typing.get_type_hints(cls)
    return found


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _join(path: str, name: str | int) -> str:
    return f"{path}.{name}" if path else str(name)


def _check_constraints(
    value: Any, meta: typing.Mapping[str, Any], path: str, out: Problems
) -> None:
    if isinstance(value, str):
        if "min_length" in meta and len(value) < meta["min_length"]:
            out.append((path, f"String should have at least {meta['min_length']} characters"))
        if "max_length" in meta and len(value) > meta["max_length"]:
            out.append((path, f"String should have at most {meta['max_length']} characters"))
        if "pattern" in meta and not _compiled(meta["pattern"]).search(value):
            out.append((path, f"String should match pattern '{meta['pattern']}'"))
        return
    if "ge" in meta and value < meta["ge"]:
        out.append((path, f"Input should be greater than or equal to {meta['ge']}"))
    if "gt" in meta and value <= meta["gt"]:
        out.append((path, f"Input should be greater than {meta['gt']}"))
    if "lt" in meta and value >= meta["lt"]:
        out.append((path, f"Input should be less than {meta['lt']}"))


def _coerce(value: Any, hint: Any, path: str, out: Problems) -> Any:
    """``value`` as ``hint`` (a nested record built from a dict); problems go to ``out``."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        real = [o for o in options if o is not type(None)]
        if len(real) != 1:  # pragma: no cover - not used by any record
            raise TypeError(f"unsupported union {hint}")
        return _coerce(value, real[0], path, out)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            out.append((path, "Input should be " + " or ".join(repr(a) for a in allowed)))
        return value
    if origin is list:
        if not isinstance(value, list):
            out.append((path, "Input should be a valid list"))
            return value
        (item,) = typing.get_args(hint)
        return [_coerce(v, item, _join(path, i), out) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            out.append((path, "Input should be a valid dictionary"))
            return value
        _, item = typing.get_args(hint)
        result = {}
        for key, v in value.items():
            if not isinstance(key, str):
                out.append((_join(path, str(key)), "Keys should be strings"))
                continue
            result[key] = _coerce(v, item, _join(path, key), out)
        return result
    if isinstance(hint, type) and issubclass(hint, Record):
        if isinstance(value, hint):
            return value
        if isinstance(value, dict):
            return hint._build(value, path, out)
        out.append((path, "Input should be an object"))
        return value
    if hint is bool:
        if not isinstance(value, bool):
            out.append((path, "Input should be a valid boolean"))
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            out.append((path, "Input should be a valid integer"))
        return value
    if hint is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            out.append((path, "Input should be a valid number"))
            return value
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            out.append((path, "Input should be a valid string"))
        return value
    raise TypeError(f"unsupported annotation {hint!r} at {path}")  # pragma: no cover


def _check_field(
    value: Any, field: dataclasses.Field[Any], hint: Any, path: str, out: Problems
) -> Any:
    before = len(out)
    value = _coerce(value, hint, path, out)
    if len(out) == before and value is not None and field.metadata:
        _check_constraints(value, field.metadata, path, out)
    return value


@dataclasses.dataclass(kw_only=True)
class Record:
    """Base of the birth config's parts. Constructing one validates it, like loading it."""

    def __post_init__(self) -> None:
        out: Problems = []
        hints = _hints(type(self))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            setattr(
                self, field.name, _check_field(value, field, hints[field.name], field.name, out)
            )
        if not out:
            out.extend(self._check())
        if out:
            raise RecordError(out)

    def _check(self) -> Problems:
        """Checks across fields; (path, message) pairs. Override where needed."""
        return []

    @classmethod
    def _build(cls, data: dict[str, Any], path: str, out: Problems) -> Any:
        hints = _hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        for key in data:
            if key not in fields:
                out.append((_join(path, str(key)), "Extra inputs are not permitted"))
        values: dict[str, Any] = {}
        before = len(out)
        for name, field in fields.items():
            where = _join(path, name)
            if name in data:
                values[name] = _check_field(data[name], field, hints[name], where, out)
            elif field.default is not dataclasses.MISSING:
                values[name] = field.default
            elif field.default_factory is not dataclasses.MISSING:
                values[name] = field.default_factory()
            else:
                out.append((where, "Field required"))
        if len(out) > before:
            return None
        record = cls.__new__(cls)
        record.__dict__.update(values)
        out.extend((_join(path, where), what) for where, what in record._check())
        return record

    @classmethod
    def model_validate(cls, data: Any) -> Self:
        """Build from parsed JSON; RecordError lists every problem with its path."""
        out: Problems = []
        if not isinstance(data, dict):
            raise RecordError([("", "Input should be an object")])
        record = cls._build(data, "", out)
        if out:
            raise RecordError(out)
        return typing.cast(Self, record)

    def model_dump(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"))

    def model_copy(self, *, update: dict[str, Any] | None = None) -> Self:
        return dataclasses.replace(self, **(update or {}))
