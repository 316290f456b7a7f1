"""Importing a scenario from the browser: a zip, or a folder picked whole.

Both are held by the library to the same rules (no path that escapes the package, no
symlinks, nothing over its limits), so an import takes the whole package or nothing. A
package that does not load is still imported, marked so, for the editor to fix.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from realms.console.access import operator_required
from realms.library import files as trees
from realms.library import services as library
from realms.models import Scenario


class ImportRefused(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _read(upload: UploadedFile[bytes], budget: list[int]) -> bytes:
    if (upload.size or 0) > trees.MAX_TOTAL_BYTES - budget[0]:
        raise ImportRefused("archive", "the upload is larger than 5 MB")
    data = bytes(upload.read())
    budget[0] += len(data)
    return data


def _folder(request: HttpRequest, budget: list[int]) -> tuple[dict[str, bytes], str]:
    """The picked folder's files by their path inside it, and the folder's name."""
    uploads = request.FILES.getlist("folder")
    paths = request.POST.getlist("folder_path")
    if len(paths) != len(uploads):
        raise ImportRefused("folder", "the folder's file paths did not arrive; pick it again")
    if len(uploads) > trees.MAX_FILES:
        raise ImportRefused("folder", f"the folder has more than {trees.MAX_FILES} files")
    files: dict[str, bytes] = {}
    for path, upload in zip(paths, uploads, strict=True):
        if path in files:
            raise ImportRefused("folder", f"{path}: appears twice")
        files[path] = _read(upload, budget)
    try:
        checked = trees.check_tree(files, where="the folder")
    except trees.PackageTreeError as exc:
        raise ImportRefused("folder", str(exc)) from exc
    top, inside = trees.strip_common_folder(checked)
    return inside, top or ""


def _name(request: HttpRequest, guessed: str) -> str:
    name = request.POST.get("name", "").strip() or guessed
    if not library.NAME_RE.match(name):
        raise ImportRefused(
            "name",
            f"{name!r}: use letters, digits, '.', '_' or '-' (at most 120, starting with a "
            "letter or digit)",
        )
    taken = Scenario.objects.filter(name=name, source=Scenario.Source.USER).exists()
    if taken and not request.POST.get("replace"):
        raise ImportRefused(
            "name", f"you already have a scenario named {name}; tick replace, or pick a name"
        )
    return name


def _import(request: HttpRequest) -> Scenario:
    budget = [0]
    archive = request.FILES.get("archive")
    picked = bool(request.FILES.getlist("folder"))
    if archive is not None and picked:
        raise ImportRefused("archive", "send a zip or a folder, not both")
    try:
        if archive is not None:
            data = _read(archive, budget)
            where = archive.name or "upload.zip"
            name = _name(request, where.removesuffix(".zip"))
            return library.import_zip(data, name=name, origin=f"console upload {where}")
        if picked:
            files, top = _folder(request, budget)
            name = _name(request, top)
            return library.import_tree(files, name=name, origin="console folder upload")
    except library.LibraryError as exc:
        raise ImportRefused("folder" if picked else "archive", str(exc)) from exc
    raise ImportRefused("archive", "choose a zip file or a folder to import")


@operator_required
@require_http_methods(["GET", "POST"])
def import_package(request: HttpRequest) -> HttpResponse:
    context = {"nav": "scenarios", "errors": {}, "name": request.POST.get("name", "")}
    if request.method == "POST":
        try:
            scenario = _import(request)
        except ImportRefused as exc:
            context["errors"] = {exc.field: str(exc)}
            return render(request, "console/scenarios/import.html", context, status=400)
        if scenario.valid:
            messages.success(request, f"Imported {scenario.name}.")
        else:
            messages.warning(
                request, f"Imported {scenario.name}, but it does not load; fix it in the editor."
            )
        return redirect("console:scenario", name=scenario.name)
    return render(request, "console/scenarios/import.html", context)
