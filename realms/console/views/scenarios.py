"""The scenarios page (a card per library scenario) and a scenario's preview."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from realms.console import catalogue
from realms.console.access import operator_required
from realms.console.markdown import render as markdown
from realms.library import services as library
from realms.models import Scenario
from realms.services.consent import elevated_grants


def scenario_or_404(name: str) -> Scenario:
    scenario = catalogue.find(name)
    if scenario is None:
        raise Http404(f"no scenario named {name!r} in the library")
    return scenario


@operator_required
def index(request: HttpRequest) -> HttpResponse:
    cards = catalogue.cards()
    return render(
        request,
        "console/scenarios/index.html",
        {
            "nav": "scenarios",
            "cards": [(c, markdown(c.readme, below=2) if c.readme else "") for c in cards],
            "invalid": sum(1 for c in cards if c.first_error),
        },
    )


@operator_required
def preview(request: HttpRequest, name: str) -> HttpResponse:
    scenario = scenario_or_404(name)
    result = library.load_scenario(scenario)
    card = catalogue.card(scenario, result)
    project = result.project
    rules: dict[str, object] = {"termination": [], "mechanics": [], "turns": [], "elevated": []}
    if project is not None:
        rules = {
            "termination": [
                catalogue.settings_of(c, defaults=False) for c in project.effective_termination
            ],
            "mechanics": [catalogue.settings_of(m) for m in project.spec.mechanics],
            "turns": catalogue.settings_of(project.spec.turns) if project.spec.turns else [],
            "elevated": elevated_grants(project),
        }
    return render(
        request,
        "console/scenarios/preview.html",
        {
            "nav": "scenarios",
            "card": card,
            "result": result,
            "project": project,
            **rules,
            "readme": markdown(card.readme) if card.readme else "",
            "shadows_example": card.editable and catalogue.example_shadowed(name),
        },
    )
