"""The skills page: built-in and user skills, one skill's SKILL.md, and the writes the
operator may make: import a user skill (a zip or one SKILL.md), delete one, export one.

Every read and write is the skills library's (:mod:`realms.library.skills`); built-in
skills are read-only there.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from realms.console.access import operator_required
from realms.console.markdown import render as markdown
from realms.library import files as trees
from realms.library import skills
from realms.library.files import MAX_TOTAL_BYTES
from realms.plan import AGENT_SKILL, REFEREE_SKILL

_GIVEN_TO = {AGENT_SKILL: "every participant", REFEREE_SKILL: "every referee"}


def _row(skill: skills.Skill) -> dict[str, Any]:
    doc = skill.doc()
    return {
        **skill.summary(doc),
        "body": doc.body,
        "given_to": _GIVEN_TO.get(skill.ref, "") if skill.source == skills.BUILTIN else "",
    }


def _skill_or_404(source: str, ref: str) -> skills.Skill:
    try:
        return skills.get_skill(source, ref)
    except skills.SkillError as exc:
        raise Http404(str(exc)) from exc


@operator_required
def index(request: HttpRequest) -> HttpResponse:
    rows = [_row(skill) for skill in skills.list_skills()]
    return render(
        request,
        "console/skills/index.html",
        {
            "nav": "skills",
            "builtin": [r for r in rows if not r["editable"]],
            "user": [r for r in rows if r["editable"]],
        },
    )


@operator_required
def detail(request: HttpRequest, source: str, ref: str) -> HttpResponse:
    skill = _skill_or_404(source, ref)
    row = _row(skill)
    return render(
        request,
        "console/skills/detail.html",
        {
            "nav": "skills",
            "skill": row,
            "files": sorted(skill.files()),
            "html": markdown(str(row["body"])),
        },
    )


@operator_required
def export(request: HttpRequest, source: str, ref: str) -> HttpResponse:
    skill = _skill_or_404(source, ref)
    response = HttpResponse(skills.export_zip(skill), content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{skill.ref}.zip"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


class _Refused(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _exists(ref: str) -> bool:
    try:
        skills.get_skill(skills.USER, ref)
    except skills.SkillError:
        return False
    return True


def _import(request: HttpRequest) -> skills.Skill:
    upload = request.FILES.get("upload")
    if upload is None:
        raise _Refused("upload", "choose a skill's zip, or its SKILL.md")
    if (upload.size or 0) > MAX_TOTAL_BYTES:
        raise _Refused("upload", "the upload is larger than 5 MB")
    data = bytes(upload.read())
    where = upload.name or "upload"
    given = request.POST.get("ref", "").strip()
    try:
        if where.lower().endswith(".zip"):
            files = trees.read_zip(data, where=where)
        else:
            files = {skills.SKILL_FILE: data}
        ref = given or skills.ref_for(files, where=where, fallback=PurePosixPath(where).stem)
    except (skills.SkillError, trees.PackageTreeError) as exc:
        raise _Refused("upload", str(exc)) from exc
    if _exists(ref) and not request.POST.get("replace"):
        raise _Refused("ref", f"you already have a skill named {ref}; tick replace, or pick a ref")
    try:
        return skills.import_skill(files, ref=ref, where=where)
    except skills.SkillError as exc:
        raise _Refused("ref" if "skill ref" in str(exc) else "upload", str(exc)) from exc


@operator_required
@require_http_methods(["GET", "POST"])
def import_skill(request: HttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"nav": "skills", "errors": {}, "ref": request.POST.get("ref", "")}
    if request.method == "POST":
        try:
            skill = _import(request)
        except _Refused as exc:
            context["errors"] = {exc.field: str(exc)}
            return render(request, "console/skills/import.html", context, status=400)
        messages.success(request, f"Imported the skill {skill.ref}.")
        return redirect("console:skill", source=skill.source, ref=skill.ref)
    return render(request, "console/skills/import.html", context)


@operator_required
@require_http_methods(["GET", "POST"])
def delete(request: HttpRequest, ref: str) -> HttpResponse:
    """GET asks for confirmation; the POST of that form deletes."""
    if request.method == "GET":
        skill = _skill_or_404(skills.USER, ref)
        return render(
            request,
            "console/scenarios/confirm_delete.html",
            {
                "nav": "skills",
                "what": f"the skill {skill.ref}",
                "consequence": "Agents that name it no longer load until it is back.",
                "back": reverse("console:skill", args=[skill.source, skill.ref]),
            },
        )
    try:
        skills.delete_skill(ref)
    except skills.SkillError as exc:
        messages.error(request, f"Not deleted: {exc}")
        return redirect("console:skills")
    messages.success(request, f"Deleted the skill {ref}.")
    return redirect("console:skills")
