"""``/login?token=…``: the one URL that may carry the operator token.

A browser cannot send a header from an address bar, so the operator opens this once
(``pit serve`` prints it): the browser is logged in as the operator's Django user (an
HttpOnly, SameSite=Strict session cookie, which ``/admin/`` and ``/api/`` take) and sent
(303) to a URL without the token, so it stays out of history, bookmarks and referrers
from then on. The browser keeps the session only, never the token. The platform's
server writes no access log, so the one request that carries it is not kept either.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit

from django.contrib.auth import login as start_session
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET

from bearpit.auth import (
    LOGIN_DEFAULT_NEXT,
    QUERY_TOKEN,
    ensure_operator,
    token_matches,
)


def _clean_next(request: HttpRequest) -> str:
    """A local path to go to, without any token in it; the default otherwise."""
    target = request.GET.get("next", "")
    if not target.startswith("/") or not url_has_allowed_host_and_scheme(
        target, allowed_hosts=None, require_https=False
    ):
        return LOGIN_DEFAULT_NEXT
    parts = urlsplit(target)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if parts.netloc or any(key == QUERY_TOKEN for key, _ in query):
        return LOGIN_DEFAULT_NEXT
    return parts.path + (f"?{urlencode(query)}" if query else "")


def _private(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


@require_GET
def login(request: HttpRequest) -> HttpResponse:
    token = request.GET.get(QUERY_TOKEN, "")
    if not token:
        body = {"error": "open /login?token=<the operator token> to sign in this browser"}
        return _private(JsonResponse(body, status=400))
    if not token_matches(token):
        return _private(JsonResponse({"error": "invalid API token"}, status=401))
    start_session(request, ensure_operator())
    return _private(HttpResponseRedirect(_clean_next(request), status=303))
