"""Pages not built yet: each says so rather than answering 404 from the navigation."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from realms.console.access import operator_required


@operator_required
def scenarios(request: HttpRequest) -> HttpResponse:
    return render(request, "console/placeholder.html", {"nav": "scenarios", "title": "Scenarios"})


@operator_required
def skills(request: HttpRequest) -> HttpResponse:
    return render(request, "console/placeholder.html", {"nav": "skills", "title": "Skills"})
