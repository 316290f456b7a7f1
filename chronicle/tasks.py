"""The task board as the Chronicle tells it: a replay of ``task`` events."""

from __future__ import annotations

from dataclasses import dataclass, field

from chronicle.kinds import Kind
from chronicle.models import Event


@dataclass
class BoardTask:
    number: int
    title: str
    state: str = "open"
    holder: str | None = None
    summary: str = ""
    reason: str = ""
    claims: int = 0
    expiries: int = 0
    merged: str = ""  # the branch, once a lead merged it
    conflicts: list[str] = field(default_factory=list)  # of the last merge that failed


def board(realm_id: str) -> list[BoardTask]:
    """Every task ever added, by number, in the state its last event left it."""
    tasks: dict[int, BoardTask] = {}
    events = Event.objects.filter(realm_id=realm_id, kind=Kind.TASK).order_by("id")
    for payload in events.values_list("payload", flat=True):
        number = payload.get("task")
        op = payload.get("op")
        if not isinstance(number, int):
            continue
        if op == "add":
            tasks[number] = BoardTask(number, str(payload.get("title") or ""))
            continue
        task = tasks.get(number)
        if task is None:
            continue
        if op == "claim":
            task.state, task.holder = "claimed", str(payload.get("agent"))
            task.claims += 1
        elif op in ("release", "expire"):
            task.state, task.holder = "open", None
            task.expiries += op == "expire"
        elif op == "block":
            task.state, task.holder = "blocked", None
            task.reason = str(payload.get("reason") or "")
        elif op == "complete":
            task.state, task.holder = "done", str(payload.get("agent"))
            task.summary = str(payload.get("summary") or "")
        elif op == "merge":
            task.merged, task.conflicts = str(payload.get("branch") or ""), []
        elif op == "conflict":
            task.conflicts = [str(f) for f in payload.get("files") or []] or ["?"]
    return [tasks[n] for n in sorted(tasks)]
