"""Scribe in the console: open a session, the session's page, approve, try the draft.

Each view parses input and calls one of Scribe's services (``scribe.services``); the
page is rebuilt from the stored session every time (:mod:`realms.console.assist_draft`),
so a reload loses nothing. A session opened in the console is its user's: another
user's is refused.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from realms.console.access import operator_required
from realms.console.assist_draft import STATE_TEXT, draft_context
from realms.console.assist_form import AssistStartForm
from realms.console.views.scenarios import scenario_or_404
from realms.services.launch import LaunchError
from realms.services.queue import ConsentRequired, QueueRefused
from scribe.models import ScribeSession
from scribe.services import sessions, trial
from scribe.services.errors import NoSuchSession, NotYours, ScribeError


def owned_session(request: HttpRequest, session_id: str) -> ScribeSession:
    """The session, if this user may see it (theirs, or one opened with the token)."""
    return sessions.owned_session(session_id, request.user)


def refused(request: HttpRequest, session_id: str, exc: Exception) -> HttpResponse:
    if isinstance(exc, NotYours):
        status, text = 403, "This Scribe session was opened by another user; it is not yours."
    else:
        status, text = 404, f"There is no Scribe session {session_id!r}."
    return render(
        request,
        "console/assist/unknown.html",
        {"nav": "scenarios", "text": text},
        status=status,
    )


def mine(request: HttpRequest) -> Any:
    return ScribeSession.objects.filter(Q(owner=request.user) | Q(owner__isnull=True))


@operator_required
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    rows = mine(request).order_by("-updated_at")[:100]
    return render(
        request,
        "console/assist/index.html",
        {"nav": "scenarios", "sessions": rows, "state_text": STATE_TEXT},
    )


@operator_required
@require_http_methods(["GET", "POST"])
def start(request: HttpRequest) -> HttpResponse:
    """The new-session form; ``?scenario=NAME`` edits that scenario instead of a new one."""
    edit = (request.GET.get("scenario") or request.POST.get("scenario") or "").strip() or None
    scenario = scenario_or_404(edit) if edit else None
    form = AssistStartForm(request.POST if request.method == "POST" else None, edit=edit)
    context: dict[str, Any] = {"nav": "scenarios", "form": form, "scenario": scenario}
    if request.method == "GET" or not form.is_valid():
        status = 200 if request.method == "GET" else 400
        return render(request, "console/assist/start.html", context, status=status)
    data = form.cleaned_data
    try:
        session = sessions.create_session(
            "edit" if edit else "create",
            edit or data.get("name") or None,
            provider=data["provider"],
            tier=data["tier"],
            cap_usd=data["cap_usd"],
            owner=request.user,
        )
    except ScribeError as exc:
        context["problem"] = str(exc)
        return render(request, "console/assist/start.html", context, status=400)
    return redirect("console:assist_session", session_id=session.session_id)


def _page(
    request: HttpRequest, session: ScribeSession, *, status: int = 200, **extra: Any
) -> HttpResponse:
    context = {"nav": "scenarios", **draft_context(session), **extra}
    return render(request, "console/assist/session.html", context, status=status)


@operator_required
@require_GET
def session_page(request: HttpRequest, session_id: str) -> HttpResponse:
    try:
        session = owned_session(request, session_id)
    except (NoSuchSession, NotYours) as exc:
        return refused(request, session_id, exc)
    return _page(request, session)


@operator_required
@require_GET
def draft(request: HttpRequest, session_id: str) -> HttpResponse:
    """The draft beside the chat, as a fragment (refreshed when a reply ends)."""
    try:
        session = owned_session(request, session_id)
    except (NoSuchSession, NotYours) as exc:
        return refused(request, session_id, exc)
    return render(request, "console/assist/_draft.html", draft_context(session))


@operator_required
@require_POST
def validate(request: HttpRequest, session_id: str) -> HttpResponse:
    """Check the draft again with the library's validator; nothing is stored."""
    try:
        session = owned_session(request, session_id)
    except (NoSuchSession, NotYours) as exc:
        return refused(request, session_id, exc)
    context = {**draft_context(session), "checked": True}
    if request.headers.get("HX-Request"):
        return render(request, "console/assist/_draft.html", context)
    return _page(request, session, checked=True)


@operator_required
@require_POST
def approve(request: HttpRequest, session_id: str) -> HttpResponse:
    try:
        owned_session(request, session_id)
        scenario = sessions.approve(session_id)
    except (NoSuchSession, NotYours) as exc:
        return refused(request, session_id, exc)
    except ScribeError as exc:
        session = sessions.get_session(session_id)
        return _page(request, session, status=409, approve_problem=str(exc))
    messages.success(request, f"Approved: the draft is saved to the library as {scenario.name}.")
    return redirect("console:scenario", name=scenario.name)


@operator_required
@require_POST
def launch(request: HttpRequest, session_id: str) -> HttpResponse:
    """Launch the draft as it is now on the offline provider, without saving it."""
    try:
        session = owned_session(request, session_id)
    except (NoSuchSession, NotYours) as exc:
        return refused(request, session_id, exc)
    realm_id = request.POST.get("realm_id", "").strip() or None
    try:
        realm = trial.launch_draft(
            session,
            realm_id=realm_id,
            allow_elevated=request.POST.get("allow_elevated_tools") == "on",
            capacity=settings.BEARPIT_MAX_ACTIVE_REALMS,
        )
    except QueueRefused as exc:
        return _page(request, session, status=exc.status, launch_problems=[str(exc)])
    except (ConsentRequired, LaunchError) as exc:
        return _page(request, session, status=400, launch_problems=exc.problems)
    except ScribeError as exc:
        return _page(request, session, status=400, launch_problems=[str(exc)])
    return redirect("console:realm", realm_id=realm.realm_id)
