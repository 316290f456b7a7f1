"""Every route under ``/api/``, every method it allows, against every way in and out.

The routes are read from the URL resolver when the test runs, so a route added later is
covered without touching this file. For each (route, method): no credentials is refused;
the bearer token and the operator's session are accepted; on a write, the session
without the CSRF token and any request from a foreign ``Origin`` are refused; a ``Host``
outside ``BEARPIT_ALLOWED_HOSTS`` is refused. "Accepted" means the view ran: any answer
but the authentication layer's 401/403 (a 400 or 404 for the placeholder arguments is
the view speaking).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from bearpit.auth import OperatorAPIView

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]

TOKEN = "test-operator-token-matrix-0123456789"
BEARER = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
UNSAFE = ("post", "put", "patch", "delete")
_METHODS = ("get", "post", "put", "patch", "delete")
# A value each path converter accepts; the view then answers for a thing that is not there.
_PLACEHOLDER = {"int": "1", "uuid": "00000000-0000-0000-0000-000000000000"}
_ARGUMENT = re.compile(r"<(?:(?P<converter>\w+):)?\w+>")


@dataclass(frozen=True)
class Route:
    path: str
    view: type | None
    methods: tuple[str, ...]

    @property
    def media_type(self) -> str:
        """What the view parses first: a body it cannot parse would be refused (415)
        before the CSRF check could be seen to refuse it."""
        parsers = getattr(self.view, "parser_classes", None) or []
        return str(parsers[0].media_type) if parsers else "application/json"

    def __str__(self) -> str:
        return self.path


def _walk(patterns: list[URLPattern | URLResolver], prefix: str) -> Iterator[URLPattern | str]:
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from _walk(pattern.url_patterns, route)
        elif route.startswith("api/"):
            yield route
            yield pattern


def api_routes() -> list[Route]:
    found: dict[str, Route] = {}
    items = list(_walk(get_resolver().url_patterns, ""))
    for route, pattern in zip(items[::2], items[1::2], strict=True):
        assert isinstance(route, str) and isinstance(pattern, URLPattern)
        path = "/" + _ARGUMENT.sub(lambda m: _PLACEHOLDER.get(m["converter"] or "", "x"), route)
        view = getattr(pattern.callback, "view_class", None)
        methods = tuple(m for m in _METHODS if view is None or hasattr(view, m))
        found.setdefault(path, Route(path, view, methods))
    return sorted(found.values(), key=str)


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_SCENARIOS_DIR = tmp_path / "scenarios"
    settings.BEARPIT_API_TOKEN = TOKEN
    settings.BEARPIT_DOCKER_URL = f"unix://{tmp_path}/no-engine.sock"


@pytest.fixture(scope="module")
def routes() -> list[Route]:
    found = api_routes()
    paths = {r.path for r in found}
    # The enumeration itself must work: a matrix over no routes would pass anything.
    assert {"/api/realms", "/api/settings", "/api/settings/model-config", "/api/schema/"} <= paths
    assert any(set(r.methods) & set(UNSAFE) for r in found)
    return found


def browser() -> Client:
    return Client(enforce_csrf_checks=True)


def operator_browser() -> tuple[Client, str]:
    """A browser logged in by the bootstrap URL, and its CSRF token."""
    client = browser()
    assert client.get(f"/login?token={TOKEN}").status_code == 303
    return client, client.cookies["csrftoken"].value


def call(client: Client, method: str, route: Route, **headers: str) -> HttpResponse:
    send: Callable[..., HttpResponse] = getattr(client, method)
    if method in ("get", "delete"):
        return send(route.path, **headers)
    return send(route.path, data=b"{}", content_type=route.media_type, **headers)


def is_auth_refusal(response: HttpResponse) -> bool:
    return response.status_code in (401, 403)


def each_call(routes: list[Route], *, unsafe_only: bool = False) -> Iterator[tuple[str, Route]]:
    for route in routes:
        for method in route.methods:
            if not unsafe_only or method in UNSAFE:
                yield method, route


def test_every_api_route_is_an_operator_view(routes):
    """A view outside OperatorAPIView would carry none of the checks below."""
    strays = [r.path for r in routes if r.view is None or not issubclass(r.view, OperatorAPIView)]
    assert strays == []
    assert all(issubclass(r.view, APIView) for r in routes if r.view is not None)


def test_an_anonymous_call_is_refused(routes):
    client = browser()
    wrong = [
        f"{m.upper()} {p}: {status}"
        for m, p in each_call(routes)
        if (status := call(client, m, p).status_code) not in (401, 403)
    ]
    assert wrong == []


def test_a_wrong_bearer_token_is_refused(routes):
    client = browser()
    wrong = [
        f"{m.upper()} {p}: {status}"
        for m, p in each_call(routes)
        if (status := call(client, m, p, HTTP_AUTHORIZATION=f"Bearer {TOKEN}x").status_code) != 401
    ]
    assert wrong == []


def test_the_bearer_token_is_accepted_without_csrf(routes):
    client = browser()
    wrong = [
        f"{m.upper()} {p}: {r.status_code} {r.content[:120]!r}"
        for m, p in each_call(routes)
        if is_auth_refusal(r := call(client, m, p, **BEARER))
    ]
    assert wrong == []


def test_the_operator_session_is_accepted_with_its_csrf_token(routes):
    client, csrf = operator_browser()
    wrong = [
        f"{m.upper()} {p}: {r.status_code} {r.content[:120]!r}"
        for m, p in each_call(routes)
        if is_auth_refusal(r := call(client, m, p, HTTP_X_CSRFTOKEN=csrf))
    ]
    assert wrong == []


def test_a_session_write_without_the_csrf_token_is_refused(routes):
    client, _ = operator_browser()
    wrong = [
        f"{m.upper()} {p}: {r.status_code}"
        for m, p in each_call(routes, unsafe_only=True)
        if (r := call(client, m, p)).status_code != 403 or b"CSRF" not in r.content
    ]
    assert wrong == []


@pytest.mark.parametrize("credentials", ["session", "bearer"])
def test_a_write_from_a_foreign_origin_is_refused(routes, credentials):
    client, csrf = operator_browser()
    headers = {"HTTP_X_CSRFTOKEN": csrf} if credentials == "session" else dict(BEARER)
    wrong = []
    for m, p in each_call(routes, unsafe_only=True):
        for foreign in (
            {"HTTP_ORIGIN": "http://evil.example"},
            {"HTTP_ORIGIN": "null"},
            {"HTTP_SEC_FETCH_SITE": "cross-site"},
        ):
            status = call(client, m, p, **headers, **foreign).status_code
            if status != 403:
                wrong.append(f"{m.upper()} {p} {foreign}: {status}")
    assert wrong == []


def test_a_host_outside_the_allowlist_is_refused(routes):
    client = browser()
    wrong = [
        f"{m.upper()} {p}: {status}"
        for m, p in each_call(routes)
        if (status := call(client, m, p, HTTP_HOST="evil.example", **BEARER).status_code) != 400
    ]
    assert wrong == []
