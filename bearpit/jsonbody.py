"""Reading a JSON request body of the HTTP API within limits.

Python's parser recurses, so a body nested a hundred thousand deep would raise
``RecursionError`` (a 500); NaN and Infinity parse but can never be stored or sent
back as JSON; NULs and unpaired surrogates parse but no database keeps them. Each of
these is a located 400 here, before a view sees the body.
"""

from __future__ import annotations

import json
from typing import IO, Any

from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from chronicle.values import MAX_DEPTH, BadValue, check_value

MAX_JSON_BODY_BYTES = 1024 * 1024
"""An API JSON body; the largest real one (a launch with its parameters) is a few KiB."""


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class BodyError(ValueError):
    """The body is not JSON the platform can take; the message says where."""


def _refuse_constant(name: str) -> Any:
    raise BodyError(f"{name} is not a JSON number")


def loads_body(raw: bytes | str, *, where: str = "body", max_depth: int = MAX_DEPTH) -> Any:
    """Parse and check a request body; raise :class:`BodyError` with a located message."""
    try:
        value = json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise BodyError(f"{where}: JSON nested deeper than {max_depth} levels") from None
    except UnicodeDecodeError as exc:
        raise BodyError(f"{where}: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BodyError(
            f"{where}: not JSON: {exc.msg} (line {exc.lineno} column {exc.colno})"
        ) from None
    except BodyError as exc:
        raise BodyError(f"{where}: {exc}") from None
    try:
        check_value(value, where, max_depth=max_depth, max_bytes=None)
    except BadValue as exc:
        problem = exc.problem
        if problem.startswith("nested deeper"):
            problem = "JSON " + problem
        raise BodyError(f"{exc.where}: {problem}") from None
    return value


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the limits of :func:`loads_body`."""

    max_bytes = MAX_JSON_BODY_BYTES

    def parse(
        self, stream: IO[Any] | None, media_type: str | None = None, parser_context: Any = None
    ) -> Any:
        raw = stream.read(self.max_bytes + 1) if stream is not None else b""
        if len(raw) > self.max_bytes:
            raise BodyTooLarge(f"the JSON body is larger than {self.max_bytes} bytes")
        try:
            return loads_body(raw)
        except BodyError as exc:
            raise ParseError(str(exc)) from None
