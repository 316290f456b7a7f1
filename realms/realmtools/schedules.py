"""Schedules: an agent asks to be woken with a note, once, on an interval, or on a cron.

A schedule is a row; the Warden turns it into a wake when it falls due
(``schedules_wakes.fire_due``). Everything is checked here, before the row exists: one of
``after``, ``every`` or ``cron``; a cron's five fields (a bad one is named); intervals not
shorter than the package's ``min_every``; at most ``max_per_agent`` active schedules per
agent. Setting and cancelling are ``schedule`` events.
"""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Max, QuerySet

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.services import record_event
from realms.models import Realm
from realms.packages.schema.common import parse_duration
from realms.plan import SchedulesPlan
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal
from realms.realmtools.models import Schedule
from realms.realmtools.schedules_cron import Cron, CronError, parse_cron, shortest_gap_s

MAX_NOTE = 1000
MIN_AFTER_S = 5.0
MAX_DELAY_S = 30 * 86_400.0
_ID = re.compile(r"^\s*(?:s|#|schedule\s*)?(\d{1,6})\s*$", re.IGNORECASE)


def plan_of_schedules(caller: Caller) -> SchedulesPlan:
    plan = caller.facts.plan.schedules
    if plan is None:
        raise Refusal("this realm has no schedules")
    return plan


def schedule_number(value: int | str) -> int:
    """A schedule id as an agent writes it: 3, "3", "S3" or "#3"."""
    if isinstance(value, bool):
        raise Refusal("id must be a schedule number such as 3")
    if isinstance(value, int):
        number = value
    else:
        match = _ID.match(str(value))
        if match is None:
            raise Refusal(f"id {value!r} is not a schedule number such as 3")
        number = int(match.group(1))
    if number < 1:
        raise Refusal("schedule numbers start at 1")
    return number


def _seconds(value: str | int | float, name: str) -> float:
    if isinstance(value, bool):
        raise Refusal(f"{name}: expected a duration such as 90s, 5m or 2h")
    if isinstance(value, int | float):
        return float(value)
    try:
        return parse_duration(str(value).strip())
    except ValueError:
        raise Refusal(f"{name}: expected a duration such as 90s, 5m or 2h; got {value!r}") from None


def _cron(text: str, plan: SchedulesPlan, now: int) -> Cron:
    try:
        cron = parse_cron(text)
    except CronError as exc:
        raise Refusal(f"cron: {exc}") from None
    if cron.next_after(now) is None:
        raise Refusal(f"cron: {cron.text!r} never fires")
    gap = shortest_gap_s(cron, now)
    if gap is not None and gap < plan.min_every_s:
        raise Refusal(
            f"cron: {cron.text!r} fires every {gap:g}s at times; this realm's schedules "
            f"repeat at most every {plan.min_every_s:g}s"
        )
    return cron


def _first_fire(
    after: str | int | float | None,
    every: str | int | float | None,
    cron: str | None,
    plan: SchedulesPlan,
    now: int,
) -> tuple[str, str, float | None, int]:
    """(kind, spec, every_s, first fire in ms) of a valid request, or a Refusal."""
    given = [name for name, v in (("after", after), ("every", every), ("cron", cron)) if v]
    if len(given) != 1:
        raise Refusal("give exactly one of after (a delay), every (an interval) or cron")
    if after is not None and after != "":
        seconds = _seconds(after, "after")
        if not MIN_AFTER_S <= seconds <= MAX_DELAY_S:
            raise Refusal(f"after: expected from {MIN_AFTER_S:g}s to 30d; got {seconds:g}s")
        return Schedule.Kind.AFTER, str(after), None, now + round(seconds * 1000)
    if every is not None and every != "":
        seconds = _seconds(every, "every")
        if not plan.min_every_s <= seconds <= MAX_DELAY_S:
            raise Refusal(
                f"every: expected from {plan.min_every_s:g}s (this realm's shortest interval) "
                f"to 30d; got {seconds:g}s"
            )
        return Schedule.Kind.EVERY, str(every), seconds, now + round(seconds * 1000)
    parsed = _cron(str(cron), plan, now)
    first = parsed.next_after(now)
    assert first is not None
    return Schedule.Kind.CRON, parsed.text, None, first


def _schedules(realm_id: str) -> QuerySet[Schedule]:
    return Schedule.objects.filter(realm__realm_id=realm_id)


def view(row: Schedule) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": row.number,
        row.kind: row.spec,
        "note": row.note,
        "state": row.state,
        "fired": row.fired,
    }
    if row.next_fire_ms is not None and row.state == Schedule.State.ACTIVE:
        out["next_due_in_s"] = max(0, round((row.next_fire_ms - now_ms()) / 1000))
    if row.last_fired_ms is not None:
        out["last_due_s_ago"] = max(0, round((now_ms() - row.last_fired_ms) / 1000))
    return out


def schedule(
    caller: Caller,
    note: str,
    after: str | int | float | None = None,
    every: str | int | float | None = None,
    cron: str | None = None,
) -> dict[str, Any]:
    plan = plan_of_schedules(caller)
    text = (note or "").strip()
    if not text:
        raise Refusal("note is empty: say what you want to be reminded of")
    if len(text) > MAX_NOTE:
        raise Refusal(f"note is longer than {MAX_NOTE} characters")
    now = now_ms()
    kind, spec, every_s, first = _first_fire(after, every, cron, plan, now)
    realm = Realm.objects.get(realm_id=caller.realm_id)
    # The realm lock numbers schedules and counts an agent's active ones one at a time,
    # so racing calls can never hold more than the bound between them.
    with realm_lock(caller.realm_id):
        mine = _schedules(caller.realm_id).filter(
            agent_id=caller.agent_id, state=Schedule.State.ACTIVE
        )
        if mine.count() >= plan.max_per_agent:
            raise Refusal(
                f"you already hold {plan.max_per_agent} active schedules, this realm's limit; "
                "cancel one with schedule_cancel first"
            )
        top = _schedules(caller.realm_id).aggregate(top=Max("number"))["top"] or 0
        row = Schedule.objects.create(
            realm=realm,
            number=top + 1,
            agent_id=caller.agent_id,
            kind=kind,
            spec=spec,
            every_s=every_s,
            note=text,
            next_fire_ms=first,
            created_ms=now,
        )
        record_event(
            caller.realm_id,
            Kind.SCHEDULE,
            {
                "op": "add",
                "schedule": row.number,
                "agent": caller.agent_id,
                "kind": kind,
                "spec": spec,
                "note": text,
                "first_due_ms": first,
            },
        )
    return {"scheduled": view(row)}


def schedule_cancel(caller: Caller, id: int | str) -> dict[str, Any]:
    plan_of_schedules(caller)
    number = schedule_number(id)
    row = _schedules(caller.realm_id).filter(number=number, agent_id=caller.agent_id).first()
    if row is None:
        raise Refusal(f"you have no schedule {number}; schedule_list shows yours")
    with realm_lock(caller.realm_id):
        cancelled = Schedule.objects.filter(pk=row.pk, state=Schedule.State.ACTIVE).update(
            state=Schedule.State.CANCELLED, next_fire_ms=None
        )
        if cancelled != 1:
            raise Refusal(f"schedule {number} is already {row.state}")
        record_event(
            caller.realm_id,
            Kind.SCHEDULE,
            {"op": "cancel", "schedule": number, "agent": caller.agent_id},
        )
    return {"cancelled": number}


def schedule_list(caller: Caller) -> dict[str, Any]:
    plan = plan_of_schedules(caller)
    rows = _schedules(caller.realm_id).filter(agent_id=caller.agent_id).order_by("number")
    active = [view(r) for r in rows if r.state == Schedule.State.ACTIVE]
    ended = [view(r) for r in rows if r.state != Schedule.State.ACTIVE][-10:]
    return {"active": active, "recently_ended": ended, "limit": plan.max_per_agent}
