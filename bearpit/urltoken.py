"""No route but ``/login`` takes the operator token in its URL.

uvicorn and daphne write every request line to their access logs, so a token in a
query string is a token in a log file. Refusing it everywhere else (even alongside a
good header) makes the mistake visible at once instead of silently working.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from realms.api.auth import LOGIN_PATH, QUERY_TOKEN

REFUSAL = (
    f"the API token is not accepted in a URL, where access logs keep it: send "
    f"Authorization: Bearer <token>, or open {LOGIN_PATH}?token=… once in a browser "
    "(it sets a cookie and takes you to a clean URL)"
)


class QueryTokenRefusedMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if QUERY_TOKEN in request.GET and request.path != LOGIN_PATH:
            response = JsonResponse({"error": REFUSAL}, status=400)
            response["Cache-Control"] = "no-store"
            response["Referrer-Policy"] = "no-referrer"
            return response
        return self.get_response(request)
