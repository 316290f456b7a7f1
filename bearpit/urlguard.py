"""Checks on a request's URL that hold for every route, before any view runs.

* No route but ``/login`` takes the operator token in its URL: uvicorn and daphne write
  every request line to their access logs, so a token in a query string is a token in a
  log file. Refusing it everywhere else (even alongside a good header) makes the mistake
  visible at once instead of silently working.
* A NUL (``%00``) or an unpaired surrogate in the path or the query would reach the
  database as a lookup value, and PostgreSQL fails on a NUL in any text: a 400 here.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from bearpit.auth import LOGIN_PATH, QUERY_TOKEN
from chronicle.values import char_problem

REFUSAL = (
    f"the API token is not accepted in a URL, where access logs keep it: send "
    f"Authorization: Bearer <token>, or open {LOGIN_PATH}?token=… once in a browser "
    "(it starts a session and takes you to a clean URL)"
)


def _refused(message: str) -> JsonResponse:
    response = JsonResponse({"error": message}, status=400)
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


def url_problem(request: HttpRequest) -> str | None:
    """Where the URL holds a character no database keeps, or None."""
    problem = char_problem(request.path)
    if problem is not None:
        return f"the path {problem}"
    for key, values in request.GET.lists():
        for text, what in (
            (key, f"the name of query parameter {key!r}"),
            *((v, key) for v in values),
        ):
            problem = char_problem(text)
            if problem is not None:
                return f"query parameter {what}: {problem}"
    return None


class UrlCharactersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        problem = url_problem(request)
        if problem is not None:
            return _refused(problem)
        return self.get_response(request)


class QueryTokenRefusedMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if QUERY_TOKEN in request.GET and request.path != LOGIN_PATH:
            return _refused(REFUSAL)
        return self.get_response(request)
