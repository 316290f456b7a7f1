"""``task_merge``: a lead or the referee merges a done task's branch into the shared
folder's checkout, in its own sandbox. A conflict is reported (the files in conflict),
the merge aborted and the checkout left as it was; nothing is hidden or half-merged."""

from __future__ import annotations

from typing import Any

from realms.realmtools import worktrees
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal
from realms.realmtools.models import Task
from realms.realmtools.taskboard import board_of, is_lead, task_number


def task_merge(caller: Caller, id: int | str) -> dict[str, Any]:
    board = board_of(caller)
    if not board.worktrees:
        raise Refusal("this realm's task board has no worktrees")
    if not is_lead(caller):
        raise Refusal("only the referee or a lead may merge a task")
    number = task_number(id)
    task = Task.objects.filter(realm__realm_id=caller.realm_id, number=number).first()
    if task is None:
        raise Refusal(f"there is no task {number}; task_list shows the board")
    if task.state != Task.State.DONE:
        raise Refusal(f"task {number} is {task.state}; only a done task is merged")
    who = caller.agent_id
    message = f"Merge task {number}: {task.title}"
    try:
        got = worktrees.run_git(caller.realm_id, who, "merge", number, who, message)
    except worktrees.NoSandbox as exc:
        raise Refusal(f"cannot merge: {exc}") from None
    if "error" in got:
        raise Refusal(f"task {number} was not merged: {got['error']}")
    branch, into = got["branch"], got["into"]
    if got.get("already"):
        return {"merged": number, "already": True, "branch": branch, "into": into}
    if got.get("merged"):
        worktrees.record(
            caller.realm_id, "merge", number, who,
            branch=branch, into=into, sha=got["sha"], files=got["files"],
        )  # fmt: skip
        return {
            "merged": number,
            "branch": branch,
            "into": into,
            "commit": got["sha"],
            "files": got["files"],
        }
    conflicts = list(got.get("conflicts") or [])
    worktrees.record(
        caller.realm_id, "conflict", number, who,
        branch=branch, into=into, files=conflicts, clean=bool(got.get("clean")),
        detail=str(got.get("detail") or ""),
    )  # fmt: skip
    state = "left as it was" if got.get("clean") else "NOT clean: check git status"
    listed = ", ".join(conflicts) or str(got.get("detail") or "no file named")
    return {
        "error": f"merging {branch} into {into} conflicts in: {listed}; the merge was "
        f"aborted and the checkout {state}. Resolve it on a new task (merge {into} into "
        f"{branch} there), then merge again.",
        "conflicts": conflicts,
        "clean": bool(got.get("clean")),
    }
