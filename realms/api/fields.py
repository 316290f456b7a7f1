"""Strict DRF fields and the request parsing every realm route shares.

DRF's own fields coerce: ``"yes"`` becomes ``True``, ``5`` becomes ``"5"``. A script that
sends the wrong type should hear so, not have its value reinterpreted, so these fields
refuse anything but the JSON type they name. Errors come back flat, one message per
dotted field (``turns.enabled``), and a field no serializer declares is named too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import ErrorDetail, ValidationError

UNKNOWN = "unknown field"
BODY = "body"


class StrictBooleanField(serializers.BooleanField):
    def to_internal_value(self, data: Any) -> bool:
        if not isinstance(data, bool):
            raise ValidationError(f"expected true or false; got {data!r}")
        return data


class QueryBooleanField(serializers.BooleanField):
    """A flag in a query string: ``true``/``false`` (``1``/``0``) and nothing looser."""

    _WORDS = {"true": True, "1": True, "false": False, "0": False}

    def to_internal_value(self, data: Any) -> bool:
        value = self._WORDS.get(str(data).strip().lower()) if isinstance(data, str) else None
        if value is None:
            raise ValidationError(f"expected true or false; got {data!r}")
        return value


class StrictCharField(serializers.CharField):
    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise ValidationError(f"expected a string; got {data!r}")
        return str(super().to_internal_value(data))


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "boolean"}]})
class ScalarField(serializers.Field):  # type: ignore[type-arg]
    """A parameter value: a string, a number or a boolean (never null, a list or an object)."""

    def to_internal_value(self, data: Any) -> str | int | float | bool:
        if not isinstance(data, str | int | float | bool):
            raise ValidationError(f"expected a string, a number or true/false; got {data!r}")
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class StrictSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """Refuses fields it does not declare, by name, instead of ignoring them."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                errors: dict[str, Any] = {name: [UNKNOWN] for name in unknown}
                try:
                    super().to_internal_value(data)
                except ValidationError as exc:
                    if isinstance(exc.detail, dict):
                        errors.update(exc.detail)
                raise ValidationError(errors)
        return super().to_internal_value(data)


def flat_errors(detail: Any, prefix: str = "") -> dict[str, str]:
    """``{"turns": {"enabled": ["…"]}}`` → ``{"turns.enabled": "…"}``."""
    if isinstance(detail, Mapping):
        out: dict[str, str] = {}
        for key, value in detail.items():
            name = BODY if key == "non_field_errors" else str(key)
            out.update(flat_errors(value, f"{prefix}.{name}" if prefix else name))
        return out
    if isinstance(detail, list) and detail and all(isinstance(d, Mapping) for d in detail):
        out = {}
        for index, value in enumerate(detail):
            out.update(flat_errors(value, f"{prefix}[{index}]"))
        return out
    items = detail if isinstance(detail, list) else [detail]
    text = "; ".join(str(d) for d in items if isinstance(d, ErrorDetail | str))
    return {prefix or BODY: text}


S = TypeVar("S", bound=serializers.Serializer)  # type: ignore[type-arg]


def parse(serializer_class: type[S], data: Any) -> dict[str, Any]:
    """The validated data, or a 400 that names every field at fault."""
    if not isinstance(data, Mapping):
        raise ValidationError({BODY: "expected a JSON object"})
    serializer = serializer_class(data=data)
    if not serializer.is_valid():
        raise ValidationError(flat_errors(serializer.errors))
    return dict(serializer.validated_data)


def parse_query(serializer_class: type[S], query: Any) -> dict[str, Any]:
    """A query string through a serializer; a repeated parameter is refused, not guessed."""
    data: dict[str, Any] = {}
    refused: dict[str, str] = {}
    for key in query:
        values = query.getlist(key)
        if len(values) > 1:
            refused[key] = "given more than once"
        elif any(ord(c) < 32 or ord(c) == 127 for c in values[0] + key):
            refused[key.replace("\x00", "")] = "control characters are not allowed"
        data[key] = values[-1]
    if refused:
        raise ValidationError(refused)
    return parse(serializer_class, data)
