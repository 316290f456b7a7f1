"""The task board: tasks a team adds, claims, completes, blocks and hands back.

A claim is taken with a conditional UPDATE that only matches a task still claimable, so
when several agents claim at once exactly one row update succeeds and every other
claimant is refused; it never depends on the callers being serialised. A claim carries a
lease the claimant renews by working (``taskboard_leases``); the Warden hands a task whose
lease ran out back to the pool. Every change is a ``task`` event written in the same
transaction as the row.
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.db.models import Max, QuerySet

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.selectors import agents_out
from chronicle.services import record_event
from realms.models import Realm
from realms.plan import TaskBoardPlan
from realms.realmtools import worktrees
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal
from realms.realmtools.models import Task

MAX_TASKS = 200
MAX_TITLE = 200
MAX_DETAIL = 4000
MAX_SUMMARY = 4000
MAX_REASON = 2000
MAX_DEPENDENCIES = 50
NOBODY = frozenset({"", "none", "nobody"})
FILTERS = ("all", "open", "mine", "claimed", "blocked", "done", "waiting")
CLAIMABLE = (Task.State.OPEN, Task.State.BLOCKED)
_ID = re.compile(r"^\s*(?:t|#|task\s*)?(\d{1,6})\s*$", re.IGNORECASE)


def board_of(caller: Caller) -> TaskBoardPlan:
    board = caller.facts.plan.task_board
    if board is None:
        raise Refusal("this realm has no task board")
    return board


def is_lead(caller: Caller) -> bool:
    """The referee and the board's declared leads may assign tasks."""
    board = caller.facts.plan.task_board
    return caller.is_referee or (board is not None and caller.agent_id in board.leads)


def task_number(value: int | str) -> int:
    """A task id as an agent writes it: 3, "3", "T3" or "#3"."""
    if isinstance(value, bool):
        raise Refusal("id must be a task number such as 3")
    if isinstance(value, int):
        number = value
    else:
        match = _ID.match(str(value))
        if match is None:
            raise Refusal(f"id {value!r} is not a task number such as 3")
        number = int(match.group(1))
    if number < 1:
        raise Refusal("task numbers start at 1")
    return number


def _text(value: str | None, name: str, limit: int, *, required: bool) -> str:
    text = (value or "").strip()
    if required and not text:
        raise Refusal(f"{name} is empty")
    if len(text) > limit:
        raise Refusal(f"{name} is longer than {limit} characters")
    return text


def _tasks(realm_id: str) -> QuerySet[Task]:
    return Task.objects.filter(realm__realm_id=realm_id)


def _get(caller: Caller, number: int) -> Task:
    task = _tasks(caller.realm_id).filter(number=number).first()
    if task is None:
        raise Refusal(f"there is no task {number}; task_list shows the board")
    return task


def _done(realm_id: str) -> set[int]:
    rows = _tasks(realm_id).filter(state=Task.State.DONE).values_list("number", flat=True)
    return set(rows)


def _waiting_on(task: Task, done: set[int]) -> list[int]:
    return [int(n) for n in task.depends_on if int(n) not in done]


def _participant(caller: Caller, agent: str) -> str:
    name = agent.strip().lstrip("@").lower()
    if name not in caller.facts.participants:
        roster = ", ".join(caller.facts.participants)
        raise Refusal(f"{agent!r} is not a participant of this realm; roster: {roster}")
    if name in agents_out(caller.realm_id):
        raise Refusal(f"{name} has been eliminated and cannot take tasks")
    return name


def _record(caller: Caller, op: str, task: int, **fields: Any) -> None:
    payload = {"op": op, "task": task, "agent": caller.agent_id, **fields}
    record_event(caller.realm_id, Kind.TASK, payload)


def view(task: Task, done: set[int], now: int) -> dict[str, Any]:
    """One task as an agent reads it; empty fields are left out to keep the list short."""
    out: dict[str, Any] = {"id": task.number, "title": task.title, "state": task.state}
    waiting = _waiting_on(task, done)
    optional: dict[str, Any] = {
        "detail": task.detail,
        "depends_on": [int(n) for n in task.depends_on],
        "waiting_on": waiting if task.state != Task.State.DONE else [],
        "assignee": task.assignee,
        "claimant": task.claimant,
        "summary": task.summary,
        "block_reason": task.block_reason,
    }
    out.update({k: v for k, v in optional.items() if v})
    if task.state == Task.State.CLAIMED and task.lease_until_ms is not None:
        out["lease_left_s"] = max(0, round((task.lease_until_ms - now) / 1000))
    return out


def task_add(
    caller: Caller,
    title: str,
    detail: str | None,
    depends_on: list[int | str] | None,
    assignee: str | None,
) -> dict[str, Any]:
    board_of(caller)
    name = _text(title, "title", MAX_TITLE, required=True)
    text = _text(detail, "detail", MAX_DETAIL, required=False)
    wanted = [task_number(d) for d in depends_on or []]
    if len(wanted) > MAX_DEPENDENCIES:
        raise Refusal(f"a task depends on at most {MAX_DEPENDENCIES} others")
    deps = sorted(set(wanted))
    who = ""
    if assignee is not None and assignee.strip().lower() not in NOBODY:
        if not is_lead(caller):
            raise Refusal("only the referee or a lead may assign a task; leave assignee out")
        who = _participant(caller, assignee)
    realm = Realm.objects.get(realm_id=caller.realm_id)
    # The realm lock numbers tasks one at a time, so two adds never take the same number.
    with realm_lock(caller.realm_id):
        count = _tasks(caller.realm_id).count()
        if count >= MAX_TASKS:
            raise Refusal(f"the board is full ({MAX_TASKS} tasks)")
        top = _tasks(caller.realm_id).aggregate(top=Max("number"))["top"] or 0
        unknown = [d for d in deps if d > top]
        if unknown:
            listed = ", ".join(str(d) for d in unknown)
            raise Refusal(f"depends_on names tasks that do not exist: {listed}")
        task = Task.objects.create(
            realm=realm,
            number=top + 1,
            title=name,
            detail=text,
            depends_on=deps,
            assignee=who,
            created_by=caller.agent_id,
            created_ms=now_ms(),
        )
        _record(caller, "add", task.number, title=name, detail=text, depends_on=deps, assignee=who)
    return {"added": view(task, _done(caller.realm_id), now_ms())}


def task_list(caller: Caller, filter: str | None) -> dict[str, Any]:
    board_of(caller)
    which = (filter or "all").strip().lower()
    if which not in FILTERS:
        raise Refusal(f"filter must be one of {', '.join(FILTERS)}")
    tasks = list(_tasks(caller.realm_id).order_by("number"))
    done = {t.number for t in tasks if t.state == Task.State.DONE}
    now = now_ms()
    counts = {state: sum(t.state == state for t in tasks) for state in Task.State.values}

    def keep(task: Task) -> bool:
        waiting = bool(_waiting_on(task, done))
        if which == "open":
            return task.state in CLAIMABLE and not waiting
        if which == "waiting":
            return task.state in CLAIMABLE and waiting
        if which == "mine":
            return caller.agent_id in (task.claimant, task.assignee) and task.state != "done"
        return which == "all" or task.state == which

    return {"tasks": [view(t, done, now) for t in tasks if keep(t)], "counts": counts}


def task_claim(caller: Caller, id: int | str) -> dict[str, Any]:
    board = board_of(caller)
    number = task_number(id)
    with transaction.atomic():
        task = _get(caller, number)
        if task.state == Task.State.DONE:
            raise Refusal(f"task {number} is already done")
        if task.state == Task.State.CLAIMED:
            if task.claimant == caller.agent_id:
                raise Refusal(f"you already hold task {number}")
            raise Refusal(f"task {number} is claimed by {task.claimant}")
        if task.assignee and task.assignee != caller.agent_id:
            raise Refusal(f"task {number} is assigned to {task.assignee}")
        waiting = _waiting_on(task, _done(caller.realm_id))
        if waiting:
            listed = ", ".join(str(n) for n in waiting)
            raise Refusal(f"task {number} waits on tasks not done yet: {listed}")
        now = now_ms()
        lease_until = now + round(board.lease_s * 1000)
        # On the row alone, never through a join: PostgreSQL re-checks a plain WHERE
        # against the row a concurrent claim committed, but a join becomes a subquery
        # whose snapshot would still see the task open.
        won = Task.objects.filter(pk=task.pk, state__in=CLAIMABLE, assignee=task.assignee).update(
            state=Task.State.CLAIMED,
            claimant=caller.agent_id,
            lease_until_ms=lease_until,
            block_reason="",
        )
        if won != 1:
            raise Refusal(f"task {number} was claimed by someone else first")
        _record(caller, "claim", number, lease_s=board.lease_s)
    task.refresh_from_db()
    answer = {
        "claimed": view(task, _done(caller.realm_id), now),
        "note": f"the claim lasts {board.lease_s:g}s after your last tool call or message",
    }
    tree = worktrees.on_claim(caller, number)
    if tree is not None:
        answer["worktree"] = tree
    return answer


def _held(caller: Caller, number: int, verb: str) -> Task:
    task = _get(caller, number)
    claimed = task.state == Task.State.CLAIMED
    if not claimed or (task.claimant != caller.agent_id and not is_lead(caller)):
        holder = f"it is claimed by {task.claimant}" if claimed else f"it is {task.state}"
        raise Refusal(f"you cannot {verb} task {number}: {holder}")
    return task


def _move(task: Task, **changes: Any) -> bool:
    """Change a task only if nobody changed its claim meanwhile."""
    matched = Task.objects.filter(pk=task.pk, state=task.state, claimant=task.claimant).update(
        **changes
    )
    return matched == 1


def task_release(caller: Caller, id: int | str) -> dict[str, Any]:
    board_of(caller)
    number = task_number(id)
    with transaction.atomic():
        task = _held(caller, number, "release")
        if not _move(task, state=Task.State.OPEN, claimant="", lease_until_ms=None):
            raise Refusal(f"task {number} changed meanwhile; try again")
        _record(caller, "release", number, claimant=task.claimant)
    answer: dict[str, Any] = {"released": number, "state": Task.State.OPEN}
    _clean_up(caller, number, task.claimant, "release", answer)
    return answer


def _clean_up(
    caller: Caller, number: int, claimant: str, reason: str, answer: dict[str, Any]
) -> None:
    """A task that left its claimant's hands loses its worktree (the branch stays)."""
    board = caller.facts.plan.task_board
    tree = worktrees.on_release(
        caller.realm_id, board, number, claimant, by=caller.agent_id, reason=reason
    )
    if tree is not None:
        answer["worktree"] = tree


def task_complete(caller: Caller, id: int | str, summary: str) -> dict[str, Any]:
    board_of(caller)
    number = task_number(id)
    text = _text(summary, "summary", MAX_SUMMARY, required=True)
    _check_completer(caller, _get(caller, number))
    # Outside the transaction (git takes seconds), while the caller still holds the task.
    tree = worktrees.on_complete(caller, number, _get(caller, number).title, text)
    with transaction.atomic():
        task = _get(caller, number)
        _check_completer(caller, task)
        done = _move(task, state=Task.State.DONE, lease_until_ms=None, summary=text)
        if not done:
            raise Refusal(f"task {number} changed meanwhile (did your lease expire?)")
        _record(caller, "complete", number, summary=text)
    answer: dict[str, Any] = {"completed": number, "summary": text}
    if tree is not None:
        answer["worktree"] = tree
    return answer


def _check_completer(caller: Caller, task: Task) -> None:
    if task.state != Task.State.CLAIMED or task.claimant != caller.agent_id:
        holder = f"claimed by {task.claimant}" if task.claimant else task.state
        raise Refusal(f"only the claimant completes a task; task {task.number} is {holder}")


def task_block(caller: Caller, id: int | str, reason: str) -> dict[str, Any]:
    board_of(caller)
    number = task_number(id)
    text = _text(reason, "reason", MAX_REASON, required=True)
    with transaction.atomic():
        task = _get(caller, number)
        if task.state == Task.State.DONE:
            raise Refusal(f"task {number} is already done")
        mine = task.state == Task.State.CLAIMED and task.claimant == caller.agent_id
        if not (mine or is_lead(caller)):
            raise Refusal(f"only task {number}'s claimant, a lead or the referee may block it")
        changed = _move(
            task, state=Task.State.BLOCKED, claimant="", lease_until_ms=None, block_reason=text
        )
        if not changed:
            raise Refusal(f"task {number} changed meanwhile; try again")
        _record(caller, "block", number, reason=text, claimant=task.claimant)
    answer: dict[str, Any] = {"blocked": number, "reason": text}
    _clean_up(caller, number, task.claimant, "block", answer)
    return answer


def task_assign(caller: Caller, id: int | str, agent: str) -> dict[str, Any]:
    board_of(caller)
    number = task_number(id)
    if not is_lead(caller):
        raise Refusal("only the referee or a lead may assign tasks")
    who = "" if agent.strip().lower() in NOBODY else _participant(caller, agent)
    with transaction.atomic():
        task = _get(caller, number)
        if task.state == Task.State.DONE:
            raise Refusal(f"task {number} is already done")
        if task.state == Task.State.CLAIMED and task.claimant != who:
            raise Refusal(f"task {number} is claimed by {task.claimant}; release it first")
        if not _move(task, assignee=who):
            raise Refusal(f"task {number} changed meanwhile; try again")
        _record(caller, "assign", number, assignee=who)
    return {"assigned": number, "assignee": who or None}
