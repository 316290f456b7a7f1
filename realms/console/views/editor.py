"""The scenario editor: edit the package's files, check them as they are typed, save the
user copy; and the library's other writes: new, clone, delete, export.

Every check and write is the library's (:mod:`realms.library.services`): the editor's
check is the same located validation the API's validate route answers with, and a save
of a package that does not load is refused there with nothing written.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from realms.console import catalogue, editing
from realms.console.access import operator_required
from realms.console.views.scenarios import scenario_or_404
from realms.library import services as library
from realms.models import Scenario


def _editor(
    request: HttpRequest,
    scenario: Scenario,
    texts: dict[str, str],
    errors: list[dict[str, Any]],
    *,
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "console/scenarios/edit.html",
        {
            "nav": "scenarios",
            "scenario": scenario,
            "files": editing.ordered(texts),
            "errors": errors,
            "is_example": scenario.source == Scenario.Source.EXAMPLE,
            "kept": sorted(set(library.scenario_files(scenario)) - set(texts)),
        },
        status=status,
    )


@operator_required
@require_http_methods(["GET", "POST"])
def edit(request: HttpRequest, name: str) -> HttpResponse:
    scenario = scenario_or_404(name)
    if request.method == "GET":
        return _editor(request, scenario, catalogue.text_files(scenario), [])
    try:
        edited = editing.posted_files(request.POST)
    except editing.EditorInputError as exc:
        problem = editing.refusal(str(exc))
        return _editor(request, scenario, catalogue.text_files(scenario), [problem], status=400)
    was_example = scenario.source == Scenario.Source.EXAMPLE
    try:
        library.save_user_copy(name, editing.merged_tree(scenario, edited))
    except library.InvalidPackage as exc:
        return _editor(request, scenario, edited, exc.errors, status=400)
    except library.LibraryError as exc:
        return _editor(request, scenario, edited, [editing.refusal(str(exc))], status=400)
    if was_example:
        messages.success(
            request, f"Saved as your copy of {name}; it now shadows the bundled example."
        )
    else:
        messages.success(request, f"Saved {name}.")
    return redirect("console:scenario", name=name)


@operator_required
@require_POST
def validate(request: HttpRequest, name: str) -> JsonResponse:
    """The editor's check as the author types: the located errors, nothing stored."""
    scenario = scenario_or_404(name)
    try:
        tree = editing.merged_tree(scenario, editing.posted_files(request.POST))
    except (editing.EditorInputError, library.LibraryError) as exc:
        return JsonResponse({"ok": False, "errors": [editing.refusal(str(exc))], "warnings": []})
    return JsonResponse(library.check_tree(tree))


def _why(exc: library.LibraryError, name: str) -> str:
    if isinstance(exc, library.ScenarioExists):
        return f"the library already has a scenario named {name}; pick another name"
    return str(exc)


@operator_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "").strip() if request.method == "POST" else ""
    if request.method == "POST":
        try:
            library.create_scenario(name, editing.template(name), origin="console template")
        except library.LibraryError as exc:
            return render(
                request,
                "console/scenarios/new.html",
                {"nav": "scenarios", "name": name, "problem": _why(exc, name)},
                status=400,
            )
        messages.success(request, f"Created {name} from the template.")
        return redirect("console:scenario_edit", name=name)
    return render(request, "console/scenarios/new.html", {"nav": "scenarios", "name": name})


@operator_required
@require_POST
def clone(request: HttpRequest, name: str) -> HttpResponse:
    scenario_or_404(name)
    new_name = request.POST.get("name", "").strip()
    try:
        library.clone_scenario(new_name, name)
    except library.LibraryError as exc:
        messages.error(request, f"Not cloned: {_why(exc, new_name)}")
        return redirect("console:scenario", name=name)
    messages.success(request, f"Cloned {name} as {new_name}.")
    return redirect("console:scenario_edit", name=new_name)


@operator_required
@require_http_methods(["GET", "POST"])
def delete(request: HttpRequest, name: str) -> HttpResponse:
    """GET asks for confirmation; the POST of that form deletes."""
    if request.method == "GET":
        scenario = scenario_or_404(name)
        return render(
            request,
            "console/scenarios/confirm_delete.html",
            {
                "nav": "scenarios",
                "what": f"your copy of {name}",
                "consequence": "The bundled example of the same name shows again."
                if catalogue.example_shadowed(name)
                else "Its files are gone from the library; export it first to keep them.",
                "back": reverse("console:scenario", args=[scenario.name]),
            },
        )
    try:
        library.delete_user_copy(name)
    except library.LibraryError as exc:
        messages.error(request, f"Not deleted: {exc}")
        return redirect("console:scenarios")
    if catalogue.example_shadowed(name):
        messages.success(request, f"Deleted your copy of {name}; the bundled example is back.")
    else:
        messages.success(request, f"Deleted {name}.")
    return redirect("console:scenarios")


@operator_required
def export(request: HttpRequest, name: str) -> HttpResponse:
    scenario = scenario_or_404(name)
    response = HttpResponse(library.export_zip(scenario), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{scenario.name}.zip"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
