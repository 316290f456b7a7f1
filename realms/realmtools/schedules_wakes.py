"""Wakes: what a due schedule or an ended background job owes its agent, until acknowledged.

The Warden drives them on every tick (``realms.warden.wakes``):

* :func:`fire_due` turns every schedule whose time has come into a ``pending`` wake and
  moves the schedule on (or ends it), in one transaction: a schedule fires once per due
  time, however often the Warden restarts. A repeating schedule whose last wake is still
  pending is not stacked: the fire is counted as skipped.
* :func:`to_deliver` names the wakes to post now: never delivered, or delivered
  ``REDELIVER_S`` ago and not acknowledged. After ``MAX_DELIVERIES`` unacknowledged
  posts the wake is given up (chronicled).
* :func:`acknowledge` marks a wake acknowledged once the agent's runtime has read it: its
  trace shows the turn that received one of the wake's posts and a model reply after it.

Each step is a ``wake`` event. None of them is activity for the stall rule; what the
agent does about a wake is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from chronicle.kinds import Kind
from chronicle.models import Event, now_ms
from chronicle.services import record_event
from realms.models import Realm
from realms.realmtools.models import Schedule, Wake
from realms.realmtools.schedules_cron import CronError, parse_cron

REDELIVER_S = 120.0
MAX_DELIVERIES = 5
MAX_SHOWN = 500  # characters of a note or of a job's last lines in the wake's post
_HANDLE_AT = re.compile(r"(?<![\w-])@(?=\w)")


def unmention(text: str) -> str:
    """Agent-written text the system user posts names nobody: no ``@handle`` in it wakes
    another agent (the runtime reads any ``@id`` in a body as a mention)."""
    return _HANDLE_AT.sub("", text)


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Due:
    """A wake to post now."""

    wake_id: int
    agent_id: str
    text: str
    delivery: int  # 1 for the first post


def _next_fire(row: Schedule, now: int) -> int | None:
    """The next due time after ``now``; missed fires are not caught up."""
    if row.kind == Schedule.Kind.EVERY and row.every_s:
        step = round(row.every_s * 1000)
        due = row.next_fire_ms or now
        missed = max(0, (now - due) // step)
        return due + (missed + 1) * step
    if row.kind == Schedule.Kind.CRON:
        try:
            return parse_cron(row.spec).next_after(now)
        except CronError:
            return None
    return None


def schedule_text(row: Schedule, *, private: bool) -> str:
    kind = {"after": "after", "every": "every", "cron": "cron"}[row.kind]
    head = f"your schedule {row.number} ({kind} {row.spec}) is due."
    if not private:
        return f"{head} Others can read the Commons, so the note is not repeated here: " + (
            "schedule_list shows it."
        )
    return f'{head} Your own note: "{clip(unmention(row.note))}"'


def fire_due(realm_id: str, *, private: bool, now: int | None = None) -> list[int]:
    """Turn due schedules into pending wakes; the schedule numbers that fired."""
    at = now or now_ms()
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        return []
    due = Schedule.objects.filter(
        realm=realm, state=Schedule.State.ACTIVE, next_fire_ms__lte=at
    ).order_by("next_fire_ms", "number")
    fired: list[int] = []
    for row in due:
        seen = row.next_fire_ms
        assert seen is not None
        upcoming = _next_fire(row, at)
        state = Schedule.State.ACTIVE if upcoming is not None else Schedule.State.DONE
        pending = Wake.objects.filter(
            realm=realm, source=Wake.Source.SCHEDULE, ref=row.number, state=Wake.State.PENDING
        ).exists()
        with transaction.atomic():
            # Conditional on the due time it saw: a second Warden firing the same row at
            # the same moment moves nothing and adds nothing.
            mine = Schedule.objects.filter(
                pk=row.pk, state=Schedule.State.ACTIVE, next_fire_ms=seen
            )
            if pending:
                mine.update(next_fire_ms=upcoming, state=state, skipped=row.skipped + 1)
                continue
            if (
                mine.update(
                    next_fire_ms=upcoming, state=state, fired=row.fired + 1, last_fired_ms=at
                )
                != 1
            ):
                continue
            try:
                with transaction.atomic():
                    wake = Wake.objects.create(
                        realm=realm,
                        agent_id=row.agent_id,
                        source=Wake.Source.SCHEDULE,
                        ref=row.number,
                        due_ms=seen,
                        text=schedule_text(row, private=private),
                    )
            except IntegrityError:
                continue  # this due time already has its wake
            record_event(
                realm_id,
                Kind.WAKE,
                {
                    "op": "due",
                    "wake": wake.pk,
                    "agent": row.agent_id,
                    "source": Wake.Source.SCHEDULE,
                    "ref": row.number,
                    "due_ms": seen,
                    "next_due_ms": upcoming,
                },
            )
        fired.append(row.number)
    return fired


def add_wake(realm_id: str, agent_id: str, source: str, ref: int, text: str) -> Wake | None:
    """A pending wake for ``agent_id`` (a job that ended); chronicled as ``due``."""
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None:
        return None
    at = now_ms()
    try:
        with transaction.atomic():
            wake = Wake.objects.create(
                realm=realm, agent_id=agent_id, source=source, ref=ref, due_ms=at, text=text
            )
            record_event(
                realm_id,
                Kind.WAKE,
                {"op": "due", "wake": wake.pk, "agent": agent_id, "source": source, "ref": ref},
            )
    except IntegrityError:
        return None
    return wake


def _give_up(realm_id: str, wake: Wake, reason: str) -> None:
    with transaction.atomic():
        if (
            Wake.objects.filter(pk=wake.pk, state=Wake.State.PENDING).update(
                state=Wake.State.GAVE_UP
            )
            == 1
        ):
            record_event(
                realm_id,
                Kind.WAKE,
                {
                    "op": "give_up",
                    "wake": wake.pk,
                    "agent": wake.agent_id,
                    "source": wake.source,
                    "ref": wake.ref,
                    "deliveries": wake.deliveries,
                    "reason": reason,
                },
            )


def to_deliver(realm_id: str, out: Iterable[str], now: int | None = None) -> list[Due]:
    """The wakes to post at this tick; agents in ``out`` (eliminated, stopped) get none,
    and their wakes are given up."""
    at = now or now_ms()
    gone = set(out)
    due: list[Due] = []
    pending = Wake.objects.filter(realm__realm_id=realm_id, state=Wake.State.PENDING)
    for wake in pending.order_by("due_ms", "pk"):
        if wake.agent_id in gone:
            _give_up(realm_id, wake, "the agent is out")
            continue
        if wake.delivered_ms is not None and at - wake.delivered_ms < REDELIVER_S * 1000:
            continue
        if wake.deliveries >= MAX_DELIVERIES:
            _give_up(realm_id, wake, f"not acknowledged after {wake.deliveries} deliveries")
            continue
        due.append(Due(wake.pk, wake.agent_id, wake.text, wake.deliveries + 1))
    return due


def delivered(realm_id: str, due: Due, event_id: str, now: int | None = None) -> None:
    """Record one post of a wake (its Matrix event id is what the runtime's trace names)."""
    at = now or now_ms()
    floor = Event.objects.filter(realm_id=realm_id).aggregate(top=Max("id"))["top"] or 0
    with transaction.atomic():
        wake = Wake.objects.select_for_update().filter(pk=due.wake_id).first()
        if wake is None or wake.state != Wake.State.PENDING:
            return
        wake.event_ids = [*wake.event_ids, event_id]
        wake.deliveries += 1
        wake.delivered_ms = at
        if wake.deliveries == 1:
            wake.trace_floor = floor
        wake.save(update_fields=["event_ids", "deliveries", "delivered_ms", "trace_floor"])
        record_event(
            realm_id,
            Kind.WAKE,
            {
                "op": "deliver",
                "wake": wake.pk,
                "agent": wake.agent_id,
                "source": wake.source,
                "ref": wake.ref,
                "delivery": wake.deliveries,
                "event_id": event_id,
            },
        )


def _read_by(traces: list[dict[str, Any]], event_ids: set[str]) -> bool:
    """A ``wake`` trace record naming one of the posts, then a model reply in that run."""
    for i, record in enumerate(traces):
        raw = record.get("data")
        data: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if record.get("type") != "wake" or not event_ids & set(data.get("events") or []):
            continue
        run, seq = record.get("run_id"), record.get("seq") or 0
        for later in traces[i + 1 :]:
            if (
                later.get("type") == "model_response"
                and later.get("run_id") == run
                and (later.get("seq") or 0) > seq
            ):
                return True
    return False


def acknowledge(realm_id: str, now: int | None = None) -> list[int]:
    """Mark delivered wakes whose agent's runtime has read them; the wake ids acked."""
    at = now or now_ms()
    waiting = list(
        Wake.objects.filter(
            realm__realm_id=realm_id, state=Wake.State.PENDING, deliveries__gt=0
        ).order_by("pk")
    )
    acked: list[int] = []
    by_agent: dict[str, list[dict[str, Any]]] = {}
    for wake in waiting:
        if wake.agent_id not in by_agent:
            floor = min(w.trace_floor for w in waiting if w.agent_id == wake.agent_id)
            rows = Event.objects.filter(
                realm_id=realm_id,
                kind=Kind.TRACE,
                id__gt=floor,
                payload__agent_id=wake.agent_id,
                payload__type__in=["wake", "model_response"],
            ).order_by("id")
            by_agent[wake.agent_id] = [p for p in rows.values_list("payload", flat=True)]
        if not _read_by(by_agent[wake.agent_id], {str(e) for e in wake.event_ids}):
            continue
        with transaction.atomic():
            changed = Wake.objects.filter(pk=wake.pk, state=Wake.State.PENDING).update(
                state=Wake.State.ACKED, acked_ms=at
            )
            if changed == 1:
                record_event(
                    realm_id,
                    Kind.WAKE,
                    {
                        "op": "ack",
                        "wake": wake.pk,
                        "agent": wake.agent_id,
                        "source": wake.source,
                        "ref": wake.ref,
                        "deliveries": wake.deliveries,
                    },
                )
                acked.append(wake.pk)
    return acked
