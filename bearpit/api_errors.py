"""Every error of the HTTP API and the bus endpoint is JSON, never Django's HTML page.

Two layers: :func:`exception_handler` turns what DRF leaves unhandled into a located
4xx where the fault is the caller's (a body too large, too many fields), and
:class:`JsonErrorsMiddleware` answers JSON for whatever still becomes an error under
``/api/`` or ``/_matrix/`` (an unknown route, a body refused before any view ran, a bug).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

log = logging.getLogger("bearpit.api")

JSON_PREFIXES = ("/api/", "/_matrix/")


def too_large_message() -> str:
    return f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"


def client_fault(exc: BaseException) -> tuple[int, str] | None:
    """(status, message) for a request Django refused as the caller's fault."""
    if isinstance(exc, RequestDataTooBig):
        return 413, too_large_message()
    if isinstance(exc, TooManyFieldsSent | TooManyFilesSent):
        return 400, f"the request has too many fields or files: {exc}"
    if isinstance(exc, SuspiciousOperation):
        return 400, f"the request was refused: {exc}"
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is not None:
        return response
    fault = client_fault(exc)
    if fault is not None:
        return Response({"error": fault[1]}, status=fault[0])
    return None


def _body(path: str, status: int, message: str) -> dict[str, Any]:
    if path.startswith("/_matrix/"):
        codes = {400: "M_BAD_JSON", 404: "M_UNRECOGNIZED", 413: "M_TOO_LARGE"}
        return {"errcode": codes.get(status, "M_UNKNOWN"), "error": message}
    return {"error": message}


class JsonErrorsMiddleware:
    """Under the JSON prefixes, an HTML error page becomes a JSON body of the same status."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not request.path.startswith(JSON_PREFIXES) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            message = f"no such route: {request.method} {request.path}"
        elif response.status_code == 413:
            message = too_large_message()
        else:
            message = response.reason_phrase.lower()
        status = response.status_code
        return JsonResponse(_body(request.path, status, message), status=status)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not request.path.startswith(JSON_PREFIXES):
            return None
        fault = client_fault(exception)
        if fault is not None:
            return JsonResponse(_body(request.path, *fault), status=fault[0])
        log.exception("unhandled error on %s %s", request.method, request.path)
        message = "internal error: the server failed on this request (it was logged)"
        return JsonResponse(_body(request.path, 500, message), status=500)
