"""Pages not built yet: each says so rather than answering 404 from the navigation."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from realms.console.access import operator_required


@operator_required
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "console/placeholder.html", {"nav": "home", "title": "Realms"})


@operator_required
def history(request: HttpRequest) -> HttpResponse:
    return render(request, "console/placeholder.html", {"nav": "history", "title": "History"})


@operator_required
def settings_page(request: HttpRequest) -> HttpResponse:
    return render(request, "console/placeholder.html", {"nav": "settings", "title": "Settings"})
