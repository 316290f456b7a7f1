"""Batches in the console: the list, one batch's report (live while it runs), and the
form that starts a batch of a scenario.

A batch started here is the API's (:func:`start_library_batch`): the same planning, the
same capacity and refusals, and the server drives it to its end in the background. These
pages only read it; the detail page polls its progress partial while the batch runs.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from realms.api.batches import BATCH_ID
from realms.batch.report import batch_dir, summary
from realms.batch.service import BatchError, progress, start_library_batch
from realms.console.access import operator_required
from realms.console.batch_form import BatchForm
from realms.console.views.scenarios import scenario_or_404
from realms.library import services as library
from realms.models import Batch, Realm
from realms.services.consent import elevated_grants
from realms.services.queue import LaunchError, QueueRefused

# The newest batches the list shows.
WINDOW = 100
POLL_S = 2


def batch_or_404(batch_id: str) -> Batch:
    # An id no batch can have is not looked up (a NUL would not reach the database).
    batch = (
        Batch.objects.filter(batch_id=batch_id).first() if BATCH_ID.fullmatch(batch_id) else None
    )
    if batch is None:
        raise Http404(f"no batch {batch_id!r}")
    return batch


def _runs(batch: Batch) -> list[dict[str, Any]]:
    ids = [r["realm_id"] for r in batch.runs if r["realm_id"]]
    realms = {r.realm_id: r for r in Realm.objects.filter(realm_id__in=ids)}
    rows = []
    for run in batch.runs:
        realm = realms.get(run["realm_id"] or "")
        rows.append(
            {
                "number": int(run["index"]) + 1,
                "parameters": run["parameters"],
                "realm_id": run["realm_id"],
                "state": str(realm.state) if realm is not None else "waiting",
                "ended_by": (realm.conclusion_reason or "") if realm is not None else "",
                "outcome": (realm.outcome or "") if realm is not None else "",
                "replaced": run.get("replaced", []),
            }
        )
    return rows


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _rate(rate: dict[str, Any]) -> dict[str, Any]:
    """A k-of-n entry of the report, with its rate and interval as percentages."""
    low, high = rate.get("wilson95") or (None, None)
    return {**rate, "shown": _pct(rate.get("rate")), "low": _pct(low), "high": _pct(high)}


def _report(batch: Batch) -> dict[str, Any]:
    """The batch report: the one written when it finished (its realms no longer change),
    else the report so far, from the Chronicle."""
    if batch.state == Batch.State.FINISHED:
        written = batch_dir(batch.batch_id) / "report.json"
        try:
            data: dict[str, Any] = json.loads(written.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        else:
            if data.get("batch_id") == batch.batch_id and data.get("state") == "finished":
                return data
    return summary(batch)


def _listing() -> list[dict[str, Any]]:
    rows = []
    for batch in Batch.objects.all()[:WINDOW]:
        state = progress(batch)
        data = _report(batch)
        rows.append(
            {
                "batch": batch,
                "done": len(state.done),
                "live": len(state.live),
                "intended": data["intended"],
                **{k: v for k, v in _rate(data["intended"]).items() if k in ("low", "high")},
            }
        )
    return rows


@operator_required
@require_GET
def index(request: HttpRequest) -> HttpResponse:
    library.sync_examples()  # as the scenarios page does: examples added since are listed
    names = sorted({s.name for s in library.list_scenarios()})
    context = {"nav": "batches", "rows": _listing(), "window": WINDOW, "scenarios": names}
    return render(request, "console/batches/index.html", context)


def _detail_context(batch: Batch) -> dict[str, Any]:
    state = progress(batch)
    report = _report(batch)
    rate = _rate(report["intended"])
    return {
        "nav": "batches",
        "batch": batch,
        "report": report,
        "rate": rate["shown"],
        "low": rate["low"],
        "high": rate["high"],
        "cells": [_rate(cell) for cell in report["by_parameters"]],
        "runs": _runs(batch),
        "done": len(state.done),
        "live": len(state.live),
        "waiting": len(state.unstarted) + len(state.rerun),
        "poll_s": POLL_S,
    }


@operator_required
@require_GET
def detail(request: HttpRequest, batch_id: str) -> HttpResponse:
    batch = batch_or_404(batch_id)
    return render(request, "console/batches/detail.html", _detail_context(batch))


@operator_required
@require_GET
def live(request: HttpRequest, batch_id: str) -> HttpResponse:
    """The report part of the detail page, which the page polls while the batch runs."""
    batch = batch_or_404(batch_id)
    return render(request, "console/batches/_report.html", _detail_context(batch))


@operator_required
@require_http_methods(["GET", "POST"])
def start(request: HttpRequest, name: str) -> HttpResponse:
    scenario = scenario_or_404(name)
    result = library.load_scenario(scenario)
    context: dict[str, Any] = {"nav": "batches", "scenario": scenario, "result": result}
    template = "console/batches/start.html"
    if result.project is None:
        return render(request, template, context, status=409)
    context["elevated"] = elevated_grants(result.project)
    if context["elevated"]:
        # A batch never consents for the operator, run after run.
        return render(request, template, context, status=409)
    data = request.POST if request.method == "POST" else None
    form = BatchForm(data, parameters=result.parameters)
    context["form"] = form
    if request.method == "GET" or not form.is_valid():
        return render(request, template, context, status=200 if data is None else 400)
    try:
        batch = start_library_batch(form.request(name), settings.BEARPIT_MAX_ACTIVE_REALMS)
    except BatchError as exc:
        form.refuse(exc.problems)
        return render(request, template, context, status=400)
    except QueueRefused as exc:
        context["refused"] = {"status": exc.status, "message": str(exc)}
        return render(request, template, context, status=exc.status)
    except LaunchError as exc:
        form.refuse(exc.problems)
        return render(request, template, context, status=400)
    return redirect("console:batch", batch_id=batch.batch_id)
