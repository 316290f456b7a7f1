"""The scenario editor: edit the package's files, check them as they are typed, save the
user copy; and the library's other writes: new, clone, import, export, delete.

Every write goes through the library's services. A save is checked first with the same
loader the library uses, and one with errors is refused with nothing written.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from realms.console import catalogue, editing, located
from realms.console.access import operator_required
from realms.console.views.scenarios import scenario_or_404
from realms.library import services as library
from realms.models import Scenario

ORIGIN = "console editor"


def _editor(
    request: HttpRequest,
    scenario: Scenario,
    texts: dict[str, str],
    errors: list[located.Located],
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
        problem = located.Located(file="", line=None, path="", message=str(exc))
        return _editor(request, scenario, catalogue.text_files(scenario), [problem], status=400)
    tree = editing.merged_tree(scenario, edited)
    errors = located.check_files(tree)
    if errors:
        return _editor(request, scenario, edited, errors, status=400)
    was_example = scenario.source == Scenario.Source.EXAMPLE
    library.store_tree(name, tree, source=Scenario.Source.USER, origin=ORIGIN)
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
        edited = editing.posted_files(request.POST)
    except editing.EditorInputError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    errors = located.check_files(editing.merged_tree(scenario, edited))
    return JsonResponse({"ok": not errors, "errors": [e.as_dict() for e in errors]})


def _name_problem(name: str) -> str | None:
    if not library.NAME_RE.match(name):
        return "use letters, digits, '.', '_' or '-' (at most 120, starting with a letter or digit)"
    if Scenario.objects.filter(name=name).exists():
        return f"the library already has a scenario named {name}; pick another name"
    return None


@operator_required
@require_http_methods(["GET", "POST"])
def create(request: HttpRequest) -> HttpResponse:
    name = request.POST.get("name", "").strip() if request.method == "POST" else ""
    problem = _name_problem(name) if request.method == "POST" else None
    if request.method == "GET" or problem:
        return render(
            request,
            "console/scenarios/new.html",
            {"nav": "scenarios", "name": name, "problem": problem},
            status=400 if problem else 200,
        )
    library.store_tree(name, editing.template(name), origin="console template")
    messages.success(request, f"Created {name} from the template.")
    return redirect("console:scenario_edit", name=name)


@operator_required
@require_POST
def clone(request: HttpRequest, name: str) -> HttpResponse:
    source = scenario_or_404(name)
    new_name = request.POST.get("name", "").strip()
    problem = _name_problem(new_name)
    if problem:
        messages.error(request, f"Not cloned: {new_name or 'the new name'}: {problem}.")
        return redirect("console:scenario", name=name)
    library.store_tree(new_name, library.scenario_files(source), origin=f"clone of {name}")
    messages.success(request, f"Cloned {name} as {new_name}.")
    return redirect("console:scenario_edit", name=new_name)


@operator_required
@require_POST
def delete(request: HttpRequest, name: str) -> HttpResponse:
    try:
        library.delete_user_copy(name)
    except library.LibraryError as exc:
        messages.error(request, f"Not deleted: {exc}.")
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
