"""Importing a scenario from the browser: a zip, or a folder picked whole.

Both go through the library's zip import, which refuses paths that escape the package,
symlinks and anything over its limits, so an import takes the whole package or nothing.
"""

from __future__ import annotations

from pathlib import PurePosixPath

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


def _folder_zip(request: HttpRequest, budget: list[int]) -> tuple[bytes, str]:
    """The picked folder as a zip for the library's import, and the folder's name."""
    uploads = request.FILES.getlist("folder")
    paths = request.POST.getlist("folder_path")
    if len(paths) != len(uploads):
        raise ImportRefused("folder", "the folder's file paths did not arrive; pick it again")
    if len(uploads) > trees.MAX_FILES:
        raise ImportRefused("folder", f"the folder has more than {trees.MAX_FILES} files")
    files: dict[str, bytes] = {}
    for path, upload in zip(paths, uploads, strict=True):
        if "\x00" in path:
            raise ImportRefused("folder", f"{path!r}: the name contains a NUL character")
        if path in files:
            raise ImportRefused("folder", f"{path}: appears twice")
        files[path] = _read(upload, budget)
    top = PurePosixPath(paths[0]).parts[0] if paths and "/" in paths[0] else ""
    return trees.build_zip(files), top


def _import(request: HttpRequest) -> Scenario:
    budget = [0]
    archive = request.FILES.get("archive")
    if archive is not None and request.FILES.getlist("folder"):
        raise ImportRefused("archive", "send a zip or a folder, not both")
    if archive is not None:
        data = _read(archive, budget)
        guessed = (archive.name or "").removesuffix(".zip")
        where = archive.name or "upload.zip"
    elif request.FILES.getlist("folder"):
        data, guessed = _folder_zip(request, budget)
        where = guessed or "folder"
    else:
        raise ImportRefused("archive", "choose a zip file or a folder to import")
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
    try:
        return library.import_zip(data, name=name, origin=f"console upload {where}")
    except library.LibraryError as exc:
        raise ImportRefused("archive", str(exc)) from exc


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
