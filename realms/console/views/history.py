"""The run history: every run with its outcome, spend and duration, filtered by scenario,
outcome and state; each run's realm page, report and archived transcript; and reruns.

Rows come from the API's run history (:func:`run_history`), and a rerun goes through the
API's queue (:func:`queue_rerun`): the same capacity, consent and refusals.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from chronicle import selectors
from chronicle.report import render_report
from realms.api.status import run_history
from realms.console.access import operator_required
from realms.console.history_filters import HistoryFilter
from realms.console.rerun import RerunRefused, rerun_from_form
from realms.forge.layout import archive_dir
from realms.ids import is_realm_id
from realms.models import Realm

# The newest runs the page reads; filters narrow these.
WINDOW = 200


def _transcript_path(realm_id: str) -> Any:
    return archive_dir(realm_id) / "transcript.txt"


def _listing(request: HttpRequest) -> tuple[HistoryFilter, list[dict[str, Any]]]:
    newest = run_history(scenario=None, limit=WINDOW)["runs"]
    form = HistoryFilter(request.GET or None, runs=newest)
    if not form.is_bound:
        runs = newest
    elif not form.is_valid():
        return form, []
    else:
        scenario = form.cleaned_data.get("scenario") or None
        runs = run_history(scenario=scenario, limit=WINDOW)["runs"] if scenario else newest
        runs = [r for r in runs if form.keep(r)]
    started = dict(
        Realm.objects.filter(realm_id__in=[r["realm_id"] for r in runs]).values_list(
            "realm_id", "created_at"
        )
    )
    for run in runs:
        run["started"] = started.get(run["realm_id"])
        run["archived"] = _transcript_path(run["realm_id"]).is_file()
    return form, runs


def _page(request: HttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    form, runs = _listing(request)
    context = {"nav": "history", "form": form, "runs": runs, "window": WINDOW, **extra}
    if status == 200 and form.is_bound and not form.is_valid():
        status = 400
    partial = bool(getattr(request, "htmx", False))
    template = "console/history_table.html" if partial else "console/history.html"
    return render(request, template, context, status=status)


@operator_required
@require_GET
def history(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _unknown(request: HttpRequest, realm_id: str) -> HttpResponse:
    context = {"nav": "history", "realm_id": realm_id}
    return render(request, "console/history_unknown.html", context, status=404)


def _known(realm_id: str) -> bool:
    return is_realm_id(realm_id) and selectors.realm_known(realm_id)


@operator_required
@require_GET
def report(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not _known(realm_id):
        return _unknown(request, realm_id)
    context = {
        "nav": "history",
        "realm_id": realm_id,
        "report": render_report(realm_id),
        "roster": selectors.realm_plan(realm_id).roster,
    }
    return render(request, "console/history_report.html", context)


@operator_required
@require_GET
def transcript(request: HttpRequest, realm_id: str) -> HttpResponse:
    """The transcript the archive kept, as the plain text file it is."""
    if not _known(realm_id):
        return _unknown(request, realm_id)
    path = _transcript_path(realm_id)
    if not path.is_file():
        context = {"nav": "history", "realm_id": realm_id}
        return render(request, "console/history_no_archive.html", context, status=404)
    response = HttpResponse(path.read_bytes(), content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{realm_id}-transcript.txt"'
    # Agents wrote this text: it must never be sniffed or rendered as HTML.
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@operator_required
@require_POST
def rerun(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not _known(realm_id):
        return _unknown(request, realm_id)
    outcome = rerun_from_form(request, realm_id)
    if isinstance(outcome, RerunRefused):
        if outcome.elevated:
            context = {
                "nav": "history",
                "realm_id": realm_id,
                "mode": outcome.mode,
                "elevated": outcome.elevated,
            }
            return render(request, "console/history_consent.html", context, status=400)
        refused = {"realm_id": realm_id, "problems": outcome.problems}
        return _page(request, status=outcome.status, refused=refused)
    return redirect("console:realm", realm_id=outcome.realm_id)
