"""The realm panels' actions: an operator message, stop, rerun.

Each parses the form, calls the service the API's route calls, and answers with the
panels again (an htmx request) carrying what happened, or a refusal beside the field it
concerns with a 4xx status and nothing changed. A browser without htmx gets a redirect
to the realm's page on success and the panels on a page of their own on a refusal.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from realms.console.access import operator_required
from realms.console.rerun import RerunRefused, rerun_from_form
from realms.console.views.panels import Panels, build_panels, known, unknown_realm
from realms.services.messages import MessageError, send_operator_message
from realms.services.stop import AlreadyOver, stop_live_realm


def _htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _answer(
    request: HttpRequest, realm_id: str, note: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    """The panels with ``note`` on the panel it concerns."""
    if status < 400 and not _htmx(request):
        level = messages.WARNING if note.get("level") == "warn" else messages.SUCCESS
        messages.add_message(request, level, note["text"])
        return redirect("console:realm", realm_id=realm_id)
    panels: Panels = build_panels(realm_id)
    panels.notes[note["panel"]] = note
    context = {"p": panels}
    template = "console/realm/panels.html" if _htmx(request) else "console/realm/panels_page.html"
    return render(request, template, context, status=status)


@operator_required
@require_POST
def message(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not known(realm_id):
        return unknown_realm(request, realm_id)
    text = request.POST.get("text", "")
    to = request.POST.get("to", "").strip() or None
    note: dict[str, Any] = {"panel": "message", "text_value": text, "to_value": to or ""}
    try:
        delivery = send_operator_message(realm_id, text, to=to)
    except MessageError as exc:
        status = 409 if exc.field == "realm" else 400
        return _answer(
            request, realm_id, {**note, "field": exc.field, "error": str(exc)}, status=status
        )
    who = to or "every live agent"
    if delivery.delivered:
        done = {"panel": "message", "level": "ok", "text": f"Delivered to {who}."}
        return _answer(request, realm_id, done)
    undelivered = {
        "panel": "message",
        "level": "warn",
        "text": f"Recorded in the Chronicle but not delivered: {delivery.reason}.",
    }
    return _answer(request, realm_id, undelivered)


@operator_required
@require_POST
def stop(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not known(realm_id):
        return unknown_realm(request, realm_id)
    try:
        stop_live_realm(realm_id)
    except AlreadyOver as exc:
        return _answer(request, realm_id, {"panel": "stop", "error": str(exc)}, status=409)
    note = {
        "panel": "stop",
        "level": "ok",
        "text": "Stop requested: the realm concludes as manual on its next tick.",
    }
    return _answer(request, realm_id, note)


def _rerun_refused(
    request: HttpRequest, realm_id: str, note: dict[str, Any], status: int
) -> HttpResponse:
    return _answer(request, realm_id, {"panel": "rerun", **note}, status=status)


@operator_required
@require_POST
def rerun(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not known(realm_id):
        return unknown_realm(request, realm_id)
    outcome = rerun_from_form(request, realm_id)
    if isinstance(outcome, RerunRefused):
        note: dict[str, Any] = {"error": outcome.error}
        if outcome.where:
            note["field"] = outcome.where
        if outcome.mode:
            note["mode"] = outcome.mode
        # A refusal the page shows beside the buttons; "no worker" (503 in the API) is
        # the installation's state, not a server error, so the page says 409.
        status = outcome.status if outcome.status < 500 else 409
        return _rerun_refused(request, realm_id, note, status)
    target = f"/realms/{outcome.realm_id}/"
    if _htmx(request):
        response = HttpResponse(status=204)
        response["HX-Redirect"] = target
        return response
    return redirect(target, permanent=False)
