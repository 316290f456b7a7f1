"""A rerun asked for from a console form: the realm it queued, or why it was refused.

The realm page and the history page both offer it and show a refusal their own way; what
counts as a refusal, and its status, is decided once here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.http import HttpRequest

from realms.models import Realm
from realms.services.queue import ConsentRequired, LaunchError, QueueRefused, queue_rerun
from realms.services.rerun import Mode

MODES: dict[str, Mode] = {"snapshot": "snapshot", "latest": "latest"}


@dataclass(frozen=True)
class RerunRefused:
    status: int
    problems: list[str]
    where: str = ""
    mode: Mode | None = None
    elevated: list[str] = field(default_factory=list)

    @property
    def error(self) -> str:
        return "; ".join(self.problems)


def rerun_from_form(request: HttpRequest, realm_id: str) -> Realm | RerunRefused:
    given = request.POST.get("mode", "")
    mode = MODES.get(given)
    if mode is None:
        problem = f"mode: expected snapshot or latest; got {given[:40]!r}"
        return RerunRefused(400, [problem], where="mode")
    consent = request.POST.get("allow_elevated_tools") == "on"
    try:
        return queue_rerun(
            realm_id, mode, capacity=settings.BEARPIT_MAX_ACTIVE_REALMS, allow_elevated=consent
        )
    except ConsentRequired as exc:
        return RerunRefused(
            400, exc.problems, where="allow_elevated_tools", mode=mode, elevated=exc.elevated
        )
    except QueueRefused as exc:
        return RerunRefused(exc.status, [str(exc)], mode=mode)
    except LaunchError as exc:
        return RerunRefused(400, exc.problems, mode=mode)
