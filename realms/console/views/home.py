"""The home page: live realms with their counters, recent runs, capacity, and the first
run (toolcheck) one button away.

The launch is the API's own queue (:func:`queue_realm`): the same capacity and the same
refusals, shown on the page instead of a JSON body.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from realms.console.access import operator_required
from realms.console.overview import overview
from realms.services.launch import LaunchOptions
from realms.services.queue import LaunchError, QueueRefused, queue_realm

FIRST_RUN = "toolcheck"


def _page(request: HttpRequest, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"nav": "home", "view": overview(), "first_run": FIRST_RUN, **extra}
    return render(request, "console/home.html", context, status=status)


@operator_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return _page(request)


@operator_required
@require_GET
def live(request: HttpRequest) -> HttpResponse:
    """The part of the page that changes while realms run, for htmx to swap in."""
    return render(request, "console/home_live.html", {"view": overview()})


@operator_required
@require_POST
def launch_first_run(request: HttpRequest) -> HttpResponse:
    try:
        realm = queue_realm(FIRST_RUN, LaunchOptions(), capacity=settings.BEARPIT_MAX_ACTIVE_REALMS)
    except QueueRefused as exc:
        return _page(request, status=exc.status, refused=[str(exc)])
    except LaunchError as exc:
        return _page(request, status=400, refused=exc.problems)
    return redirect("console:realm", realm_id=realm.realm_id)
