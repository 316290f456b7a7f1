"""``/api/scribe/*``: Scribe's sessions over HTTP; each view parses input and calls a service."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from scribe.services import conversation, history, sessions
from scribe.services.errors import (
    NoSuchSession,
    NotApprovable,
    NotYours,
    ScribeError,
    SessionBusy,
    SessionClosed,
)


class SessionCreateSerializer(serializers.Serializer[dict[str, Any]]):
    mode = serializers.ChoiceField(choices=["create", "edit"])
    scenario = serializers.CharField(max_length=120, required=False, allow_blank=True)
    tier = serializers.ChoiceField(choices=list(sessions.TIERS), required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["mode"] == "edit" and not attrs.get("scenario"):
            raise serializers.ValidationError({"scenario": "required when mode is edit"})
        return attrs


class MessageSerializer(serializers.Serializer[dict[str, Any]]):
    session_id = serializers.CharField(max_length=32)
    text = serializers.CharField(max_length=conversation.MAX_TEXT, trim_whitespace=True)


class ApproveSerializer(serializers.Serializer[dict[str, Any]]):
    session_id = serializers.CharField(max_length=32)


def _valid(serializer: serializers.Serializer[dict[str, Any]]) -> dict[str, Any]:
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _refused(exc: ScribeError) -> Response:
    code: int = status.HTTP_400_BAD_REQUEST
    if isinstance(exc, NoSuchSession):
        code = status.HTTP_404_NOT_FOUND
    elif isinstance(exc, NotYours):
        code = status.HTTP_403_FORBIDDEN
    elif isinstance(exc, NotApprovable | SessionClosed | SessionBusy):
        code = status.HTTP_409_CONFLICT
    return Response({"error": str(exc)}, status=code)


def _encoded(line: dict[str, str]) -> bytes:
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


def _ndjson(lines: Iterator[dict[str, str]]) -> Iterator[bytes]:
    for line in lines:
        yield _encoded(line)


def _next_line(lines: Iterator[dict[str, str]]) -> dict[str, str] | None:
    return next(lines, None)


async def _ndjson_async(lines: Iterator[dict[str, str]]) -> AsyncIterator[bytes]:
    # Under ASGI a synchronous iterator is read whole before the first byte is sent; each
    # line is pulled in the thread the ORM uses instead, and sent as soon as it exists.
    pull = sync_to_async(_next_line, thread_sensitive=True)
    while (line := await pull(lines)) is not None:
        yield _encoded(line)


class SessionCreateView(OperatorAPIView):
    @extend_schema(request=SessionCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        body = _valid(SessionCreateSerializer(data=request.data))
        try:
            session = sessions.create_session(
                body["mode"],
                body.get("scenario") or None,
                tier=body.get("tier"),
                # A browser's session names its user; the bare token names nobody.
                owner=request.user if getattr(request.user, "pk", None) else None,
            )
        except ScribeError as exc:
            return _refused(exc)
        return Response(sessions.session_view(session), status=status.HTTP_201_CREATED)


class SessionDetailView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, session_id: str) -> Response:
        try:
            session = sessions.owned_session(session_id, request.user)
        except ScribeError as exc:
            return _refused(exc)
        return Response(sessions.session_view(session))


class MessageView(OperatorAPIView):
    """Scribe's reply as NDJSON, one ``{kind, text, name}`` per line, ending with ``done``."""

    @extend_schema(
        request=MessageSerializer, responses={(200, "application/x-ndjson"): OpenApiTypes.STR}
    )
    def post(self, request: Request) -> Response | StreamingHttpResponse:
        body = _valid(MessageSerializer(data=request.data))
        try:
            sessions.owned_session(body["session_id"], request.user)
            session = conversation.start_message(body["session_id"], body["text"])
            endpoint = sessions.endpoint_of(session)
        except ScribeError as exc:
            return _refused(exc)
        lines = conversation.reply(session, endpoint)
        stream = _ndjson_async(lines) if isinstance(request._request, ASGIRequest) else None
        response = StreamingHttpResponse(
            stream or _ndjson(lines), content_type="application/x-ndjson"
        )
        response["Cache-Control"] = "no-store"
        response["X-Accel-Buffering"] = "no"
        return response


class ApproveView(OperatorAPIView):
    @extend_schema(request=ApproveSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        body = _valid(ApproveSerializer(data=request.data))
        try:
            sessions.owned_session(body["session_id"], request.user)
            scenario = sessions.approve(body["session_id"])
        except ScribeError as exc:
            return _refused(exc)
        return Response(
            {
                "session_id": body["session_id"],
                "scenario": scenario.name,
                "source": scenario.source,
                "valid": scenario.valid,
            }
        )


class HistoryView(OperatorAPIView):
    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def get(self, request: Request, scenario: str) -> Response:
        return Response({"scenario": scenario, "history": history.entries(scenario)})

    @extend_schema(responses={200: OpenApiTypes.OBJECT})
    def delete(self, request: Request, scenario: str) -> Response:
        return Response({"scenario": scenario, "deleted": history.clear(scenario)})


class HistorySummarizeView(OperatorAPIView):
    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, scenario: str) -> Response:
        entry = history.summarize(scenario)
        return Response(
            {
                "scenario": scenario,
                "summary": entry.text if entry else None,
                "history": history.entries(scenario),
            }
        )
