"""The skills page: the built-in skills an agent may be seeded with, and one skill's text."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from realms.console.access import operator_required
from realms.console.markdown import render as markdown
from realms.plan import AGENT_SKILL, REFEREE_SKILL
from realms.skills import builtin

_GIVEN_TO = {AGENT_SKILL: "every participant", REFEREE_SKILL: "every referee"}


def _builtin(ref: str) -> dict[str, str]:
    doc = builtin.doc(ref)
    return {
        "source": "builtin",
        "ref": ref,
        "name": doc.name,
        "description": doc.description,
        "text": doc.body,
        "given_to": _GIVEN_TO.get(ref, ""),
    }


@operator_required
def index(request: HttpRequest) -> HttpResponse:
    skills = [_builtin(ref) for ref in builtin.names()]
    return render(request, "console/skills/index.html", {"nav": "skills", "skills": skills})


@operator_required
def detail(request: HttpRequest, source: str, ref: str) -> HttpResponse:
    if source != "builtin" or ref not in builtin.names():
        raise Http404(f"no {source} skill {ref!r}")
    skill = _builtin(ref)
    return render(
        request,
        "console/skills/detail.html",
        {"nav": "skills", "skill": skill, "html": markdown(skill["text"])},
    )
