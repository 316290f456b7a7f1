"""The console's message route: the user's message to Scribe, and its reply streamed back.

The reply is the same NDJSON as ``POST /api/scribe/message`` (one ``{kind, text, name}``
per line, ending with ``done``), from the same service. The Django session
authenticates and Django's CSRF check holds (the page's script sends the token), and
only the session's own user may write to it. A refusal (closed session, a reply still
running, an empty message) is a JSON ``{"error": …}`` with a 4xx; nothing is recorded.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_POST

from bearpit.auth import is_operator
from realms.console.access import signed_out
from realms.console.views.assist import owned_session
from scribe.services import conversation, sessions
from scribe.services.errors import (
    NoSuchSession,
    NotYours,
    ScribeError,
    SessionBusy,
    SessionClosed,
)

Line = dict[str, str]


def _encoded(line: Line) -> bytes:
    return json.dumps(line, ensure_ascii=False).encode() + b"\n"


def _lines(lines: Iterator[Line]) -> Iterator[bytes]:
    for line in lines:
        yield _encoded(line)


def _next(lines: Iterator[Line]) -> Line | None:
    return next(lines, None)


async def _lines_async(lines: Iterator[Line]) -> AsyncIterator[bytes]:
    # Under ASGI each line is pulled in the ORM's thread and sent as soon as it exists.
    pull = sync_to_async(_next, thread_sensitive=True)
    while (line := await pull(lines)) is not None:
        yield _encoded(line)


def _error(text: str, status: int) -> JsonResponse:
    return JsonResponse({"error": text}, status=status)


@require_POST
def message(request: HttpRequest, session_id: str) -> HttpResponseBase:
    # operator_required's check, written out: that guard wraps pages, not streams.
    if not is_operator(getattr(request, "user", None)):
        return signed_out(request)
    try:
        owned_session(request, session_id)
    except NoSuchSession as exc:
        return _error(str(exc), 404)
    except NotYours:
        return _error("this Scribe session was opened by another user", 403)
    text = request.POST.get("text", "")
    if len(text) > conversation.MAX_TEXT:
        return _error(f"text: at most {conversation.MAX_TEXT} characters", 400)
    try:
        session = conversation.start_message(session_id, text)
        endpoint = sessions.endpoint_of(session)
    except (SessionClosed, SessionBusy) as exc:
        return _error(str(exc), 409)
    except ScribeError as exc:
        return _error(str(exc), 400)
    lines = conversation.reply(session, endpoint)
    body = _lines_async(lines) if isinstance(request, ASGIRequest) else _lines(lines)
    response = StreamingHttpResponse(body, content_type="application/x-ndjson")
    response["Cache-Control"] = "no-store"
    response["X-Accel-Buffering"] = "no"
    return response
