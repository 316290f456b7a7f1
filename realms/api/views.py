"""The realm routes of the HTTP API. Each view parses input and calls one service or
selector; every route needs the operator token (see :mod:`bearpit.auth`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from pydantic import ValidationError as PydanticValidationError
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from chronicle import selectors
from chronicle.report import render_report
from chronicle.transcript import transcript_page
from realms.api import schema as _schema  # noqa: F401  (registers the token scheme)
from realms.api.status import realm_list, realm_status, redact
from realms.packages.schema.project import Turns
from realms.services.launch import LaunchOptions
from realms.services.messages import MessageError, send_operator_message
from realms.services.queue import LaunchError, QueueRefused, queue_realm
from realms.warden.termination import request_stop

# The override obeys the bounds of spec.turns.silence_timeout_s in a package.
_SILENCE_BOUNDS = {type(m).__name__: m for m in Turns.model_fields["silence_timeout_s"].metadata}
_SILENCE_ABOVE = float(_SILENCE_BOUNDS["Gt"].gt)
_SILENCE_AT_MOST = float(_SILENCE_BOUNDS["Le"].le)
DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
_LIMIT = OpenApiParameter("limit", int, description=f"1 to {MAX_LIMIT}, default {DEFAULT_LIMIT}")
_KIND = OpenApiParameter("kind", str, description="only events of this kind")
_MESSAGE = inline_serializer(
    "OperatorMessage",
    {"text": serializers.CharField(), "to": serializers.CharField(required=False)},
)


def _known(realm_id: str) -> str:
    if not selectors.realm_known(realm_id):
        raise NotFound(f"realm {realm_id!r}: no such realm")
    return realm_id


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit")
    if raw is None or raw == "":
        return DEFAULT_LIMIT
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({"limit": f"expected an integer; got {raw!r}"}) from None
    if not 1 <= value <= MAX_LIMIT:
        raise ValidationError({"limit": f"must be between 1 and {MAX_LIMIT}; got {value}"})
    return value


class RealmListView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request) -> Response:
        return Response(realm_list())

    @extend_schema(
        request=OpenApiTypes.OBJECT,
        responses={202: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 409: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        options, package = _launch_options(request.data)
        try:
            realm = queue_realm(package, options, capacity=settings.BEARPIT_MAX_ACTIVE_REALMS)
        except QueueRefused as exc:
            return Response({"error": str(exc)}, status=exc.status)
        except LaunchError as exc:
            return Response(
                {"error": "launch refused", "problems": exc.problems, "missing": exc.missing},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return Response(
            {"realm_id": realm.realm_id, "state": "starting"}, status=status.HTTP_202_ACCEPTED
        )


_LAUNCH_FIELDS = {
    "package",
    "realm_id",
    "free_response",
    "turns",
    "parameters",
    "allow_missing_parameters",
    "allow_provider_fallback",
    "provider",
}


_TURNS_FIELDS = {"enabled", "silence_timeout_s"}


def _turns_problems(turns: dict[str, Any]) -> dict[str, str]:
    """The run-time turns override {enabled, silence_timeout_s}, with the package's bounds."""
    errors = {f"turns.{k}": "unknown field" for k in sorted(set(turns) - _TURNS_FIELDS)}
    if not isinstance(turns.get("enabled", True), bool):
        errors["turns.enabled"] = f"expected true or false; got {turns['enabled']!r}"
    if "silence_timeout_s" in turns:
        try:
            Turns(silence_timeout_s=turns["silence_timeout_s"])
        except PydanticValidationError:
            errors["turns.silence_timeout_s"] = (
                f"expected a number of seconds, above {_SILENCE_ABOVE:g} and at most "
                f"{_SILENCE_AT_MOST:g}; got {turns['silence_timeout_s']!r}"
            )
    return errors


def _launch_options(data: Any) -> tuple[LaunchOptions, str]:
    """Parse a launch body strictly: unknown or mistyped fields are named, not ignored."""
    if not isinstance(data, dict):
        raise ValidationError({"body": "expected a JSON object"})
    errors: dict[str, str] = {f: "unknown field" for f in sorted(set(data) - _LAUNCH_FIELDS)}
    package = data.get("package")
    if not isinstance(package, str) or not package:
        errors["package"] = "required: the name of a scenario in the library"
    for flag in ("free_response", "allow_missing_parameters", "allow_provider_fallback"):
        if not isinstance(data.get(flag, False), bool):
            errors[flag] = f"expected true or false; got {data[flag]!r}"
    for text in ("realm_id", "provider"):
        if data.get(text) is not None and not isinstance(data[text], str):
            errors[text] = f"expected a string; got {data[text]!r}"
    parameters = data.get("parameters", {})
    if not isinstance(parameters, dict) or not all(
        isinstance(v, str | int | float | bool) for v in parameters.values()
    ):
        errors["parameters"] = "expected an object of NAME: value"
        parameters = {}
    turns = data.get("turns")
    if turns is not None and not isinstance(turns, dict):
        errors["turns"] = "expected an object {enabled, silence_timeout_s}"
    elif turns is not None:
        errors.update(_turns_problems(turns))
    if errors:
        raise ValidationError(errors)
    options = LaunchOptions(
        realm_id=data.get("realm_id") or None,
        parameters={
            str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in parameters.items()
        },
        allow_missing_parameters=data.get("allow_missing_parameters", False),
        free_response=data.get("free_response", False),
        provider=data.get("provider") or None,
        allow_provider_fallback=data.get("allow_provider_fallback", False),
        turns_override=turns,
    )
    return options, str(package)


class RealmStatusView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, realm_id: str) -> Response:
        return Response(realm_status(_known(realm_id)))


class RealmTranscriptView(OperatorAPIView):
    @extend_schema(parameters=[_LIMIT], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, realm_id: str) -> Response:
        page = transcript_page(_known(realm_id), limit=_limit(request))
        return Response(page)


class RealmEventsView(OperatorAPIView):
    @extend_schema(parameters=[_KIND, _LIMIT], responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, realm_id: str) -> Response:
        _known(realm_id)
        limit = _limit(request)
        qs = selectors.events(realm_id)
        kind = request.query_params.get("kind")
        if kind:
            qs = qs.filter(kind=kind)
        newest = list(qs.order_by("-ts_ms", "-id")[:limit])
        newest.reverse()
        rows = [{"ts": e.ts_ms, "kind": e.kind, "payload": redact(e.payload)} for e in newest]
        return Response({"events": rows})


class RealmReportView(OperatorAPIView):
    @extend_schema(responses={(200, "text/markdown"): OpenApiTypes.STR})
    def get(self, request: Request, realm_id: str) -> HttpResponse:
        body = render_report(_known(realm_id))
        response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
        # The report quotes referee text: it must never be sniffed or rendered as HTML.
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response


class RealmStopView(OperatorAPIView):
    @extend_schema(request=None, responses={202: OpenApiTypes.OBJECT})
    def post(self, request: Request, realm_id: str) -> Response:
        request_stop(_known(realm_id))
        return Response(
            {"realm_id": realm_id, "stop_requested": True}, status=status.HTTP_202_ACCEPTED
        )


class RealmMessageView(OperatorAPIView):
    @extend_schema(request=_MESSAGE, responses={200: OpenApiTypes.OBJECT, 503: OpenApiTypes.OBJECT})
    def post(self, request: Request, realm_id: str) -> Response:
        _known(realm_id)
        data: Any = request.data
        if not isinstance(data, dict):
            raise ValidationError({"body": "expected a JSON object {text, to?}"})
        text, to = data.get("text"), data.get("to")
        if not isinstance(text, str):
            raise ValidationError({"text": "required string field missing"})
        if to is not None and not isinstance(to, str):
            raise ValidationError({"to": f"expected an agent id string; got {to!r}"})
        try:
            delivery = send_operator_message(realm_id, text, to=to or None)
        except MessageError as exc:
            raise ValidationError({exc.field: str(exc)}) from None
        if not delivery.delivered:
            return Response(
                {
                    "delivered": False,
                    "recorded": True,
                    "error": f"not delivered: {delivery.reason}; the message was chronicled",
                    "retryable": delivery.retryable,
                },
                status=status.HTTP_503_SERVICE_UNAVAILABLE,
            )
        return Response({"delivered": True, "event_id": delivery.event_id})
