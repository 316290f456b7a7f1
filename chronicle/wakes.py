"""Schedules, background jobs and their wakes as the Chronicle tells them.

A replay of ``schedule``, ``job`` and ``wake`` events: what each agent scheduled, how
often each schedule fell due and was read, and how each background job ended.
"""

from __future__ import annotations

from dataclasses import dataclass

from chronicle.kinds import Kind
from chronicle.models import Event


@dataclass
class ScheduleLine:
    number: int
    agent: str
    when: str
    note: str
    cancelled: bool = False
    due: int = 0
    acked: int = 0
    given_up: int = 0


@dataclass
class JobLine:
    number: int
    agent: str
    state: str = "running"
    exit_code: int | None = None
    killed_by_agent: bool = False
    acked: bool = False


def replay(realm_id: str) -> tuple[list[ScheduleLine], list[JobLine]]:
    schedules: dict[int, ScheduleLine] = {}
    jobs: dict[int, JobLine] = {}
    kinds = (Kind.SCHEDULE, Kind.JOB, Kind.WAKE)
    rows = Event.objects.filter(realm_id=realm_id, kind__in=kinds).order_by("id")
    for kind, payload in rows.values_list("kind", "payload"):
        op = payload.get("op")
        if kind == Kind.SCHEDULE:
            number = payload.get("schedule")
            if not isinstance(number, int):
                continue
            if op == "add":
                when = f"{payload.get('kind')} {payload.get('spec')}"
                schedules[number] = ScheduleLine(
                    number, str(payload.get("agent")), when, str(payload.get("note") or "")
                )
            elif op == "cancel" and number in schedules:
                schedules[number].cancelled = True
        elif kind == Kind.JOB:
            number = payload.get("job")
            if not isinstance(number, int):
                continue
            if op == "start":
                jobs[number] = JobLine(number, str(payload.get("agent")))
            elif number in jobs and op == "kill":
                jobs[number].killed_by_agent = True
            elif number in jobs and op == "end":
                jobs[number].state = str(payload.get("state"))
                code = payload.get("exit_code")
                jobs[number].exit_code = code if isinstance(code, int) else None
        else:
            ref = payload.get("ref")
            if payload.get("source") == "schedule" and ref in schedules:
                line = schedules[ref]
                line.due += op == "due"
                line.acked += op == "ack"
                line.given_up += op == "give_up"
            elif payload.get("source") == "job" and ref in jobs and op == "ack":
                jobs[ref].acked = True
    return [schedules[n] for n in sorted(schedules)], [jobs[n] for n in sorted(jobs)]
