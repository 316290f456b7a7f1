"""The realm routes of the HTTP API: list, launch, status, transcript, events, report,
stop, rerun and operator messages. Each view parses its input through a serializer and
calls one service or selector; every route needs the operator token (:mod:`bearpit.auth`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from chronicle import selectors
from chronicle.report import render_report
from chronicle.transcript import transcript_page
from realms.api import schema as _schema  # noqa: F401  (registers the token scheme)
from realms.api import serializers as s
from realms.api.common import known, refusal
from realms.api.fields import parse, parse_query
from realms.api.status import realm_list, realm_status, redact
from realms.services.launch import LaunchOptions
from realms.services.messages import MessageError, send_operator_message
from realms.services.queue import ConsentRequired, LaunchError, QueueRefused, queue_realm
from realms.services.queue import queue_rerun as queue_rerun_service
from realms.services.stop import AlreadyOver, stop_live_realm

_LIMIT = OpenApiParameter(
    "limit", int, description=f"1 to {s.MAX_LIMIT}, default {s.DEFAULT_LIMIT}"
)
_KIND = OpenApiParameter("kind", str, description="only events of this kind")
_REFUSALS = {
    400: s.Problems,
    404: s.Error,
    409: s.Error,
    429: s.Error,
    503: s.Error,
}


def _launch_refused(exc: LaunchError) -> Response:
    body: dict[str, Any] = {
        "error": "launch refused",
        "problems": exc.problems,
        "missing": exc.missing,
    }
    if isinstance(exc, ConsentRequired):
        body["error"] = "launch refused: the package grants elevated tools"
        body["elevated"] = exc.elevated
        body["allow_elevated_tools"] = "required: true, to consent to " + ", ".join(exc.elevated)
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


def _options(data: dict[str, Any]) -> LaunchOptions:
    parameters = {
        str(k): str(v).lower() if isinstance(v, bool) else str(v)
        for k, v in data["parameters"].items()
    }
    return LaunchOptions(
        realm_id=data.get("realm_id") or None,
        parameters=parameters,
        allow_missing_parameters=data["allow_missing_parameters"],
        free_response=data["free_response"],
        provider=data.get("provider") or None,
        allow_provider_fallback=data["allow_provider_fallback"],
        turns_override=data.get("turns"),
    )


class RealmListView(OperatorAPIView):
    """Every realm, most recently active first; a launch from the library."""

    @extend_schema(operation_id="realms_list", responses={200: s.RealmList})
    def get(self, request: Request) -> Response:
        parse_query(s.EmptyRequest, request.query_params)
        return Response(realm_list())

    @extend_schema(
        operation_id="realms_launch",
        request=s.LaunchRequest,
        responses={202: s.Started, **_REFUSALS},
    )
    def post(self, request: Request) -> Response:
        data = parse(s.LaunchRequest, request.data)
        try:
            realm = queue_realm(
                data["package"],
                _options(data),
                capacity=settings.BEARPIT_MAX_ACTIVE_REALMS,
                allow_elevated=data["allow_elevated_tools"],
            )
        except QueueRefused as exc:
            return refusal(exc.status, str(exc))
        except LaunchError as exc:
            return _launch_refused(exc)
        return Response(
            {"realm_id": realm.realm_id, "state": "starting"}, status=status.HTTP_202_ACCEPTED
        )


class RealmStatusView(OperatorAPIView):
    """A realm's status: state, outcome, spend, scores, counts."""

    @extend_schema(operation_id="realm_status", responses={200: s.RealmStatus, 404: s.Error})
    def get(self, request: Request, realm_id: str) -> Response:
        parse_query(s.EmptyRequest, request.query_params)
        return Response(realm_status(known(realm_id)))


class RealmTranscriptView(OperatorAPIView):
    """The last messages of every channel, oldest first, with the channels' labels."""

    @extend_schema(parameters=[_LIMIT], responses={200: s.Transcript, 404: s.Error})
    def get(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        query = parse_query(s.LimitQuery, request.query_params)
        return Response(transcript_page(realm_id, limit=query["limit"]))


class RealmEventsView(OperatorAPIView):
    """The newest events (of one kind), oldest first, secrets masked."""

    @extend_schema(parameters=[_KIND, _LIMIT], responses={200: s.Events, 404: s.Error})
    def get(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        query = parse_query(s.EventsQuery, request.query_params)
        qs = selectors.events(realm_id)
        if query.get("kind"):
            qs = qs.filter(kind=query["kind"])
        newest = list(qs.order_by("-ts_ms", "-id")[: query["limit"]])
        newest.reverse()
        rows = [{"ts": e.ts_ms, "kind": e.kind, "payload": redact(e.payload)} for e in newest]
        return Response({"events": rows})


class RealmReportView(OperatorAPIView):
    """The final report, as Markdown."""

    @extend_schema(responses={(200, "text/markdown"): OpenApiTypes.STR, 404: s.Error})
    def get(self, request: Request, realm_id: str) -> HttpResponse:
        known(realm_id)
        parse_query(s.EmptyRequest, request.query_params)
        body = render_report(realm_id)
        response = HttpResponse(body, content_type="text/markdown; charset=utf-8")
        # The report quotes referee text: it must never be sniffed or rendered as HTML.
        response["X-Content-Type-Options"] = "nosniff"
        response["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response


class RealmStopView(OperatorAPIView):
    """The kill switch: the realm concludes as ``manual`` on its next tick."""

    @extend_schema(request=None, responses={202: s.StopAccepted, 404: s.Error, 409: s.Error})
    def post(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        try:
            stop_live_realm(realm_id)
        except AlreadyOver as exc:
            return refusal(status.HTTP_409_CONFLICT, str(exc))
        return Response(
            {"realm_id": realm_id, "stop_requested": True}, status=status.HTTP_202_ACCEPTED
        )


class RealmRerunView(OperatorAPIView):
    """Run a realm again: its stored resolved project (``snapshot``) or its package
    reloaded with today's settings (``latest``)."""

    @extend_schema(
        request=None,
        parameters=[s.RerunQuery],
        responses={202: s.RerunStarted, **_REFUSALS},
    )
    def post(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        query = parse_query(s.RerunQuery, request.query_params)
        try:
            realm = queue_rerun_service(
                realm_id,
                query["mode"],
                capacity=settings.BEARPIT_MAX_ACTIVE_REALMS,
                new_realm_id=query.get("as") or None,
                allow_provider_fallback=query["allow_provider_fallback"],
                allow_elevated=query["allow_elevated_tools"],
            )
        except QueueRefused as exc:
            return refusal(exc.status, str(exc))
        except LaunchError as exc:
            return _launch_refused(exc)
        return Response(
            {
                "realm_id": realm.realm_id,
                "state": "starting",
                "mode": query["mode"],
                "rerun_of": realm_id,
            },
            status=status.HTTP_202_ACCEPTED,
        )


class RealmMessageView(OperatorAPIView):
    """An ``[operator]`` message into the Commons (``to`` narrows the mentions)."""

    @extend_schema(
        request=s.MessageRequest,
        responses={200: s.Delivered, 400: s.Problems, 404: s.Error, 503: s.NotDelivered},
    )
    def post(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        data = parse(s.MessageRequest, request.data)
        try:
            delivery = send_operator_message(realm_id, data["text"], to=data.get("to") or None)
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


__all__ = [
    "RealmEventsView",
    "RealmListView",
    "RealmMessageView",
    "RealmReportView",
    "RealmRerunView",
    "RealmStatusView",
    "RealmStopView",
    "RealmTranscriptView",
]
