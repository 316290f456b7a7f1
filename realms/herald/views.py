"""The application-service endpoints the homeserver pushes to.

Authenticated by the hs_token, in the ``Authorization: Bearer`` header only: that is
how the homeserver sends it (we set ``use_appservice_legacy_authorization: false``), and
a token in the query string would land in access logs. A transaction is acknowledged only after its
messages are committed, so a failure here makes the homeserver send it again.
"""

from __future__ import annotations

import hmac
import json
import logging
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from realms.herald.config import Registration, load_registration
from realms.herald.mirror import mirror_events

log = logging.getLogger(__name__)

_cache: dict[tuple[Path, int], Registration] = {}


def _registration() -> Registration:
    path = Path(settings.BEARPIT_MATRIX_REGISTRATION)
    key = (path, path.stat().st_mtime_ns)
    if key not in _cache:
        _cache.clear()
        _cache[key] = load_registration(path)
    return _cache[key]


def _error(status: int, errcode: str, message: str) -> JsonResponse:
    return JsonResponse({"errcode": errcode, "error": message}, status=status)


def _refusal(request: HttpRequest) -> JsonResponse | None:
    header = request.headers.get("Authorization", "")
    token = header[7:] if header.startswith("Bearer ") else ""
    if not token:
        return _error(401, "M_UNAUTHORIZED", "missing hs_token (send it as Authorization: Bearer)")
    if not hmac.compare_digest(token.encode(), _registration().hs_token.encode()):
        return _error(403, "M_FORBIDDEN", "wrong hs_token")
    return None


@csrf_exempt
async def push_transaction(request: HttpRequest, txn_id: str) -> HttpResponse:
    if request.method != "PUT":
        return _error(405, "M_UNRECOGNIZED", "PUT only")
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    try:
        body = json.loads(request.body)
        events = body["events"]
        if not isinstance(events, list):
            raise TypeError("events is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        return _error(400, "M_BAD_JSON", f"transaction {txn_id}: {exc}")
    except RecursionError:
        return _error(400, "M_BAD_JSON", f"transaction {txn_id}: JSON nested too deep")
    new = await sync_to_async(mirror_events)(events)
    if new:
        log.debug("transaction %s: %d new messages", txn_id, new)
    return JsonResponse({})


@csrf_exempt
async def ping(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _error(405, "M_UNRECOGNIZED", "POST only")
    refusal = _refusal(request)
    return refusal if refusal is not None else JsonResponse({})


@csrf_exempt
async def not_ours(request: HttpRequest, identifier: str) -> HttpResponse:
    """User and alias queries: the platform creates its users and rooms itself."""
    refusal = _refusal(request)
    return refusal if refusal is not None else _error(404, "M_NOT_FOUND", "not provisioned")
