"""The skills page: the built-in skills every agent may be seeded with, and one skill's text."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from realms.console.access import operator_required
from realms.console.markdown import render as markdown
from realms.packages.schema.agent import BUILTIN_SKILLS
from realms.plan import AGENT_SKILL, REFEREE_SKILL
from realms.services.birth import BUILTIN_SKILLS as BUILTIN_TEXTS


def _builtin(ref: str) -> dict[str, str]:
    text = BUILTIN_TEXTS.get(ref, "")
    role = {AGENT_SKILL: "every participant", REFEREE_SKILL: "every referee"}.get(ref, "")
    return {"source": "builtin", "ref": ref, "text": text, "given_to": role}


@operator_required
def index(request: HttpRequest) -> HttpResponse:
    skills = [_builtin(ref) for ref in BUILTIN_SKILLS]
    return render(request, "console/skills/index.html", {"nav": "skills", "skills": skills})


@operator_required
def detail(request: HttpRequest, source: str, ref: str) -> HttpResponse:
    if source != "builtin" or ref not in BUILTIN_SKILLS:
        raise Http404(f"no {source} skill {ref!r}")
    skill = _builtin(ref)
    return render(
        request,
        "console/skills/detail.html",
        {"nav": "skills", "skill": skill, "html": markdown(skill["text"])},
    )
