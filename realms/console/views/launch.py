"""The launch form of a scenario: its parameters, the consents it needs, then the queue.

The launch itself is the API's (:func:`queue_realm`): the same capacity, the same
refusals. A refused launch shows each reason beside the field it concerns and starts
nothing; a launch that is accepted goes to the realm's page.

Beside the form, the forecast (``pit_forecast``'s, :func:`realms.forecast.estimate.forecast`)
of what the launch as filled in would cost and how long it may last, fetched again
(htmx) whenever a parameter or the provider changes. It launches nothing.
"""

from __future__ import annotations

from dataclasses import replace

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from realms.console.access import operator_required
from realms.console.launch_form import LaunchForm
from realms.console.views.scenarios import scenario_or_404
from realms.forecast.estimate import forecast as estimate
from realms.library import services as library
from realms.services.consent import elevated_grants
from realms.services.queue import ConsentRequired, LaunchError, QueueRefused, queue_realm


@operator_required
@require_http_methods(["GET", "POST"])
def launch(request: HttpRequest, name: str) -> HttpResponse:
    scenario = scenario_or_404(name)
    result = library.load_scenario(scenario)
    context: dict[str, object] = {"nav": "scenarios", "scenario": scenario, "result": result}
    if result.project is None:
        return render(request, "console/scenarios/launch.html", context, status=409)
    elevated = elevated_grants(result.project)
    data = request.POST if request.method == "POST" else None
    form = LaunchForm(data, parameters=result.parameters, elevated=elevated)
    context.update(form=form, elevated=elevated)
    if request.method == "GET" or not form.is_valid():
        return render(
            request, "console/scenarios/launch.html", context, status=200 if data is None else 400
        )
    try:
        realm = queue_realm(
            name,
            form.options(),
            capacity=settings.BEARPIT_MAX_ACTIVE_REALMS,
            allow_elevated=form.allow_elevated,
        )
    except QueueRefused as exc:
        context["refused"] = {"status": exc.status, "message": str(exc)}
        return render(request, "console/scenarios/launch.html", context, status=exc.status)
    except ConsentRequired as exc:
        field = "allow_elevated_tools" if "allow_elevated_tools" in form.fields else None
        form.add_error(field, "; ".join(exc.problems))
        return render(request, "console/scenarios/launch.html", context, status=400)
    except LaunchError as exc:
        form.refuse(exc.problems)
        return render(request, "console/scenarios/launch.html", context, status=400)
    return redirect("console:realm", realm_id=realm.realm_id)


# Fields whose errors do not keep a forecast from being made: consent is the launch's.
_NOT_FOR_FORECAST = ("allow_elevated_tools",)


@operator_required
@require_http_methods(["POST"])
def forecast(request: HttpRequest, name: str) -> HttpResponse:
    """The forecast partial for the launch form's values as they are now."""
    scenario = scenario_or_404(name)
    result = library.load_scenario(scenario)
    template = "console/scenarios/_forecast.html"
    if result.project is None:
        return render(request, template, {"problems": ["the scenario does not load"]}, status=409)
    form = LaunchForm(
        request.POST, parameters=result.parameters, elevated=elevated_grants(result.project)
    )
    form.is_valid()
    fixes = [
        f"{form[field].label if field in form.fields else 'form'}: {error}"
        for field, errors in form.errors.items()
        if field not in _NOT_FOR_FORECAST
        for error in errors
    ]
    if fixes:
        return render(request, template, {"fixes": fixes}, status=400)
    # The realm id is the launch's to take; the forecast measures with one of its own.
    options = replace(form.options(), realm_id=None)
    try:
        made = estimate(library.materialize(scenario), options)
    except LaunchError as exc:
        return render(request, template, {"problems": exc.problems}, status=400)
    return render(request, template, {"forecast": made})
