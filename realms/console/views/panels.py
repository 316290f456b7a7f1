"""The realm page's panels (``GET /realms/<id>/panels``, an htmx fragment): run
configuration, integrity, the state machine as one seat saw it, captured outputs, the
operator's message box, stop and rerun, and the final report once the realm has ended.

Everything is read through the selectors and services the API uses; the actions live in
:mod:`realms.console.views.realm_actions`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from chronicle import selectors
from chronicle.integrity import findings, finished
from realms.api.outputs import captured_files
from realms.api.status import realm_status, redact
from realms.console.access import operator_required
from realms.console.report_html import report_html
from realms.ids import is_realm_id
from realms.models import Realm, RealmAgent
from realms.packages.schema.project import Project
from realms.plan import RealmPlan
from realms.realmtools.machine.service import UnknownSeat, seat_history
from realms.services.consent import elevated_grants

# How many of the machine's latest steps the panel lists (the API has them all).
MACHINE_STEPS = 15
_ENDED = (*Realm.TERMINAL_STATES, Realm.State.CONCLUDING)


@dataclass(frozen=True)
class Condition:
    """One termination condition as declared: its type and the rest of its fields."""

    type: str
    fields: list[tuple[str, str]]


@dataclass
class MachineView:
    seat: str
    seats: list[tuple[str, str]]
    """(seat, label) pairs, participants first."""
    current: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    data: list[tuple[str, str]] = field(default_factory=list)
    """The current data the seat may read, each value as JSON."""
    error: str = ""
    bad_seat: bool = False


@dataclass
class Panels:
    realm_id: str
    state: str
    plan: RealmPlan
    mechanics: list[dict[str, Any]]
    parameters: dict[str, Any]
    turns: list[tuple[str, str]]
    conditions: list[Condition]
    ended: bool
    has_row: bool
    stop_requested: bool
    integrity_judged: bool
    findings: list[Any]
    machine: MachineView | None
    outputs: list[dict[str, Any]]
    live_agents: list[str]
    elevated: list[str]
    can_reload: bool
    report: str = ""
    """The final report as safe HTML (see :mod:`realms.console.report_html`)."""
    notes: dict[str, Any] = field(default_factory=dict)
    """What an action just did or refused, keyed by panel (``message``, ``stop``, …)."""

    @property
    def can_stop(self) -> bool:
        return self.has_row and not self.ended and not self.stop_requested

    @property
    def can_message(self) -> bool:
        return self.state == Realm.State.RUNNING and bool(self.live_agents)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_value(v) for v in value)
    return "—" if value is None else str(value)


def _conditions(plan: RealmPlan) -> list[Condition]:
    out = []
    for raw in plan.termination:
        rest = [(str(k), _value(v)) for k, v in raw.items() if k != "type" and v is not None]
        out.append(Condition(str(raw.get("type") or "?"), rest))
    return out


def _stored_run_config(realm_id: str, row: Realm | None) -> dict[str, Any]:
    """The run configuration as the ``running`` event chronicled it, else as the row
    stores it (a realm that never ran). Mechanics and the declared turn policy are read
    from it: the plan keeps only what the stages need of them."""
    chronicled = selectors.run_config(realm_id)
    if chronicled:
        return chronicled
    return dict(row.run_config) if row is not None and isinstance(row.run_config, dict) else {}


def _turns(config: dict[str, Any]) -> list[tuple[str, str]]:
    turns = config.get("turns")
    if not isinstance(turns, dict) or not turns:
        return []
    return [(str(k), _value(v)) for k, v in turns.items()]


def _seats(plan: RealmPlan) -> list[tuple[str, str]]:
    seats = [(a.id, a.name or a.id) for a in plan.agents if not a.is_referee]
    referee = "(referee: sees referee-only data)"
    seats += [(a.id, f"{a.name or a.id} {referee}") for a in plan.agents if a.is_referee]
    return seats


def machine_view(realm_id: str, plan: RealmPlan, seat: str | None) -> MachineView | None:
    """The machine as ``seat`` saw it (``seat_history``, as the API's machine route), or
    None for a realm without one. An unknown seat is an error beside the selector."""
    if plan.machine is None:
        return None
    seats = _seats(plan)
    chosen = seat if seat else (seats[0][0] if seats else "")
    view = MachineView(seat=chosen, seats=seats)
    if not chosen:
        view.error = "the realm's roster names no seat"
        return view
    try:
        history = seat_history(realm_id, chosen)
    except UnknownSeat as exc:
        view.error = str(exc)
        view.bad_seat = True
        return view
    if history is None:
        view.error = "the machine has not been declared yet: it is, once the realm runs"
        return view
    view.current = history["current"]
    view.data = [
        (str(k), json.dumps(v, ensure_ascii=False, sort_keys=True))
        for k, v in (history["current"].get("data") or {}).items()
    ]
    view.steps = list(reversed(history["steps"][-MACHINE_STEPS:]))
    return view


def _outputs(realm_id: str) -> list[dict[str, Any]]:
    return [
        {"name": name, "size": size, "url": f"/api/realms/{realm_id}/outputs/{quote(name)}"}
        for name, size in captured_files(realm_id)
    ]


def _elevated(row: Realm | None) -> list[str]:
    if row is None or not row.project:
        return []
    try:
        return elevated_grants(Project.model_validate(dict(row.project)))
    except ValueError:
        return []


def build_panels(realm_id: str, *, seat: str | None = None) -> Panels:
    row = Realm.objects.filter(realm_id=realm_id).first()
    status = realm_status(realm_id)
    state = str(status["state"])
    plan = selectors.realm_plan(realm_id)
    # Secret-named fields are masked as the API's status masks them.
    config = redact(_stored_run_config(realm_id, row))
    ended = state in _ENDED or (row is None and finished(realm_id))
    judged = finished(realm_id)
    live = (
        list(
            RealmAgent.objects.filter(realm=row, state=RealmAgent.State.RUNNING)
            .order_by("position")
            .values_list("agent_id", flat=True)
        )
        if row is not None
        else []
    )
    mechanics = [m for m in config.get("mechanics") or [] if isinstance(m, dict)]
    panels = Panels(
        realm_id=realm_id,
        state=state,
        plan=plan,
        mechanics=mechanics,
        parameters=redact(dict(plan.parameters)),
        turns=_turns(config),
        conditions=_conditions(plan),
        ended=ended,
        has_row=row is not None,
        stop_requested=bool(row is not None and row.stop_requested),
        integrity_judged=judged,
        findings=findings(realm_id) if judged else [],
        machine=machine_view(realm_id, plan, seat),
        outputs=_outputs(realm_id),
        live_agents=live,
        elevated=_elevated(row),
        can_reload=bool(row is not None and row.package_path),
    )
    if state in Realm.TERMINAL_STATES:
        panels.report = report_html(realm_id)
    return panels


def unknown_realm(request: HttpRequest, realm_id: str) -> HttpResponse:
    return HttpResponse(
        f"realm {realm_id!r}: no such realm", status=404, content_type="text/plain; charset=utf-8"
    )


def known(realm_id: str) -> bool:
    return is_realm_id(realm_id) and selectors.realm_known(realm_id)


def render_panels(request: HttpRequest, panels: Panels, *, status: int = 200) -> HttpResponse:
    return render(request, "console/realm/panels.html", {"p": panels}, status=status)


@operator_required
def panels(request: HttpRequest, realm_id: str) -> HttpResponse:
    if not known(realm_id):
        return unknown_realm(request, realm_id)
    built = build_panels(realm_id, seat=request.GET.get("as") or None)
    bad_seat = built.machine is not None and built.machine.bad_seat
    return render_panels(request, built, status=400 if bad_seat else 200)


@operator_required
def machine(request: HttpRequest, realm_id: str) -> HttpResponse:
    """The machine panel alone, for the seat selector (``?as=SEAT``)."""
    if not known(realm_id):
        return unknown_realm(request, realm_id)
    plan = selectors.realm_plan(realm_id)
    view = machine_view(realm_id, plan, request.GET.get("as") or None)
    if view is None:
        return HttpResponse(
            f"realm {realm_id!r} declares no state machine",
            status=404,
            content_type="text/plain; charset=utf-8",
        )
    context = {"p": {"realm_id": realm_id, "machine": view}}
    status = 400 if view.bad_seat else 200
    return render(request, "console/realm/_panel_machine.html", context, status=status)
