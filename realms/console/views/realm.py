"""The realm page: transcript, agents, turn, timeline and charts, live over the websocket."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from chronicle import selectors
from realms.console import realm_page
from realms.console.access import operator_required


def _unknown(request: HttpRequest, realm_id: str) -> HttpResponse:
    context = {"nav": "home", "realm_id": realm_id}
    return render(request, "console/realm/unknown.html", context, status=404)


@operator_required
def realm(request: HttpRequest, realm_id: str) -> HttpResponse:
    page = realm_page.realm_page(realm_id)
    if page is None:
        return _unknown(request, realm_id)
    context = {"nav": "home", "page": page, "script_data": page.script_data()}
    return render(request, "console/realm/page.html", context)


@operator_required
def earlier_messages(request: HttpRequest, realm_id: str) -> HttpResponse:
    """The window of messages before the ``before`` cursor, as transcript rows."""
    if not selectors.realm_known(realm_id):
        return _unknown(request, realm_id)
    try:
        before = realm_page.parse_cursor(request.GET.get("before", ""))
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    rows = realm_page.message_window(realm_id, before)
    context = {
        "realm_id": realm_id,
        "messages": realm_page.message_items(
            rows, realm_page.colours(realm_id), realm_page.channels(realm_id)
        ),
        "earlier": realm_page.earlier_cursor(realm_id, rows),
    }
    return render(request, "console/realm/messages.html", context)
