"""Control-plane authentication: one operator token for every ``/api/*`` route.

The token is ``settings.BEARPIT_API_TOKEN`` when set, otherwise a value generated once
into ``BEARPIT_HOME/api-token`` (mode 0600). Scripts present it as
``Authorization: Bearer <token>``; it is compared in constant time. A URL is never a
place for it (access logs keep every URL): only the bootstrap ``/login?token=…`` takes it
there, logs the browser in as the operator (a Django session) and redirects to a clean
URL, and every other route refuses ``?token=`` (``bearpit.urlguard``). The browser keeps
the session, never the token itself.

The operator is one Django superuser (``BEARPIT_OPERATOR_USER``), created on first use with
no password: the token is the only way in, and the same session opens ``/admin/``. A
browser's cookies travel by themselves, so a write on the session needs Django's CSRF
token, and writes from a foreign origin are refused, so a page on another site cannot
drive the API through the operator's browser.
"""

from __future__ import annotations

import hmac
import os
import secrets
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, SessionAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

QUERY_TOKEN = "token"  # noqa: S105 - the query parameter's name, not a secret
LOGIN_PATH = "/login"
LOGIN_DEFAULT_NEXT = "/"
_AUTH_SCHEME = "bearer"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def token_path() -> Path:
    return Path(settings.BEARPIT_HOME) / "api-token"


def api_token() -> str:
    """The operator token, generating and keeping one (0600) on first use."""
    configured = getattr(settings, "BEARPIT_API_TOKEN", None)
    if configured:
        return str(configured)
    path = token_path()
    try:
        value = path.read_text(encoding="utf-8").strip()
        if value:
            return value
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    tmp = path.with_name(f".api-token.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(value + "\n")
    try:
        # link, not replace: when two processes race, the first token written wins
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)
    return path.read_text(encoding="utf-8").strip()


def token_matches(candidate: str | None) -> bool:
    if not candidate:
        return False
    return hmac.compare_digest(candidate.encode("utf-8"), api_token().encode("utf-8"))


def bearer_token(request: Any) -> str | None:
    header = request.META.get("HTTP_AUTHORIZATION", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == _AUTH_SCHEME and value.strip():
        return str(value.strip())
    return None


def ensure_operator() -> User:
    """The operator's superuser, created on first use with no usable password."""
    user, created = User.objects.get_or_create(
        username=settings.BEARPIT_OPERATOR_USER,
        defaults={"is_staff": True, "is_superuser": True, "is_active": True},
    )
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    elif not (user.is_staff and user.is_superuser and user.is_active):
        user.is_staff = user.is_superuser = user.is_active = True
        user.save(update_fields=["is_staff", "is_superuser", "is_active"])
    return user


def is_operator(user: Any) -> bool:
    return bool(user is not None and user.is_active and user.is_superuser)


class OperatorTokenAuthentication(BaseAuthentication):
    """Authenticates the operator by the API token; a wrong token is a 401, never a guess."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, str] | None:
        token = bearer_token(request)
        if token is None:
            return None
        if not token_matches(token):
            raise exceptions.AuthenticationFailed("invalid API token")
        # No browser adds this header by itself: whoever sent it wrote it, so no CSRF check.
        return AnonymousUser(), "operator"

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="bearpit"'


class OperatorSessionAuthentication(SessionAuthentication):
    """The operator's Django session (what ``/login`` starts); CSRF on every write."""

    def authenticate(self, request: Request) -> tuple[Any, str] | None:
        user = getattr(request._request, "user", None)
        if not is_operator(user):
            return None
        self.enforce_csrf(request)
        return user, "operator"


class HasOperatorToken(BasePermission):
    message = (
        "the operator is required: send Authorization: Bearer <token>, or open "
        f"{LOGIN_PATH}?token=… once in a browser (it starts the operator's session)"
    )

    def has_permission(self, request: Request, view: APIView) -> bool:
        return bool(request.auth == "operator")


class SameOriginWrites(BasePermission):
    """Refuses writes that a browser says come from another site."""

    message = "cross-site requests may not change anything"

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in _SAFE_METHODS:
            return True
        fetch_site = request.META.get("HTTP_SEC_FETCH_SITE", "").lower()
        if fetch_site in ("cross-site", "same-site"):
            return False
        origin = str(request.META.get("HTTP_ORIGIN", ""))
        if origin == "null":  # an opaque origin (sandboxed frame, file:) is never ours
            return False
        if origin:
            return urlsplit(origin).netloc.lower() == request.get_host().lower()
        return True


class OperatorAPIView(APIView):
    """Base for every ``/api/*`` view: operator token required, same-origin writes."""

    authentication_classes = [OperatorTokenAuthentication, OperatorSessionAuthentication]
    permission_classes = [HasOperatorToken, SameOriginWrites]

    def permission_denied(
        self, request: Request, message: str | None = None, code: str | None = None
    ) -> NoReturn:
        # Without a token the answer is 401 with a challenge, not DRF's 403.
        if request.auth is None:
            raise exceptions.NotAuthenticated(HasOperatorToken.message)
        super().permission_denied(request, message, code)
