"""The local task board: ``.bearpit/tasks.json``, changed only under an exclusive file lock.

Every change reads, edits and rewrites the file (write to a temporary file, then rename)
while holding ``flock`` on ``tasks.json.lock``, so two sessions on one workspace never lose
each other's changes and a claim is atomic: of two claims of an open task exactly one wins.
A task is ``open``, ``claimed`` or ``done``; it can be claimed only while every task it
depends on is done. In a git repository a claim also gives the task its own worktree (see
``worktrees.py``), which completing commits and releasing removes.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema
from runtime.workspace.config import STATE_DIR, StatePaths
from runtime.workspace.worktrees import Git

MAX_TASKS = 500
Task = dict[str, Any]
Board = dict[str, Any]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class TaskBoard:
    def __init__(self, paths: StatePaths, claimant: str) -> None:
        self._paths = paths
        self._claimant = claimant
        self._git = Git(paths.root)
        self.git = self._git.is_repo()
        if self.git:
            self._git.exclude_state(STATE_DIR)

    # -- the file ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Board]:
        """The board, locked for the block; what the block leaves in it is written back."""
        path = self._paths.tasks
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{path}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                board: Board = (
                    json.loads(path.read_text(encoding="utf-8"))
                    if path.exists()
                    else {"next": 1, "tasks": []}
                )
                before = json.dumps(board, sort_keys=True)
                yield board
                if json.dumps(board, sort_keys=True) != before:
                    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tasks-")
                    with os.fdopen(fd, "w", encoding="utf-8") as out:
                        json.dump(board, out, indent=2, ensure_ascii=False)
                    os.replace(tmp, path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @staticmethod
    def _find(board: Board, task_id: str) -> Task:
        tasks: list[Task] = board["tasks"]
        for task in tasks:
            if task["id"] == task_id:
                return task
        raise ToolFailure(f"no task {task_id!r}", kind="not_found")

    # -- changes -------------------------------------------------------------------------

    def add(self, title: str, detail: str = "", depends_on: list[str] | None = None) -> Task:
        with self._locked() as board:
            if len(board["tasks"]) >= MAX_TASKS:
                raise ToolFailure(f"the board holds {MAX_TASKS} tasks already", kind="board_full")
            for dep in depends_on or []:
                self._find(board, dep)
            task: Task = {
                "id": f"t{board['next']}",
                "title": title,
                "detail": detail,
                "depends_on": list(dict.fromkeys(depends_on or [])),
                "status": "open",
                "claimant": None,
                "summary": None,
                "worktree": None,
                "created": _now(),
                "updated": _now(),
            }
            board["next"] += 1
            board["tasks"].append(task)
            return dict(task)

    def claim(self, task_id: str) -> Task:
        with self._locked() as board:
            task = self._find(board, task_id)
            if task["status"] != "open":
                who = f" by {task['claimant']}" if task["claimant"] else ""
                raise ToolFailure(f"{task_id} is {task['status']}{who}", kind="not_open")
            waiting = [d for d in task["depends_on"] if self._find(board, d)["status"] != "done"]
            if waiting:
                raise ToolFailure(
                    f"{task_id} waits on open dependencies: {', '.join(waiting)}",
                    kind="dependencies_open",
                )
            if self.git:
                where = self._paths.worktrees / task_id
                self._git.add_worktree(where, f"task/{task_id}")
                task["worktree"] = str(where.relative_to(self._paths.root))
            task.update(status="claimed", claimant=self._claimant, updated=_now())
            return dict(task)

    def release(self, task_id: str) -> Task:
        with self._locked() as board:
            task = self._find(board, task_id)
            if task["status"] != "claimed":
                raise ToolFailure(f"{task_id} is {task['status']}, not claimed", kind="not_claimed")
            if task["worktree"]:
                where = self._paths.root / task["worktree"]
                self._git.remove_worktree(where, f"task/{task_id}", delete_branch=True)
            task.update(status="open", claimant=None, worktree=None, updated=_now())
            return dict(task)

    def complete(self, task_id: str, summary: str) -> Task:
        with self._locked() as board:
            task = self._find(board, task_id)
            if task["status"] != "claimed":
                raise ToolFailure(
                    f"{task_id} is {task['status']}; claim it before completing it",
                    kind="not_claimed",
                )
            if task["worktree"]:
                where = self._paths.root / task["worktree"]
                task["commit"] = self._git.commit_all(
                    where, f"{task_id}: {task['title']}\n\n{summary}"
                )
            task.update(status="done", summary=summary, updated=_now())
            return dict(task)

    def merge(self, task_id: str) -> Task:
        with self._locked() as board:
            task = self._find(board, task_id)
            if not task.get("worktree") or task["status"] != "done":
                raise ToolFailure(f"{task_id} has no completed worktree to merge", kind="no_branch")
            task["merged"] = self._git.merge(f"task/{task_id}")
            self._git.remove_worktree(
                self._paths.root / task["worktree"], f"task/{task_id}", delete_branch=False
            )
            task.update(worktree=None, updated=_now())
            return dict(task)

    def tasks(self, status: str | None = None) -> list[Task]:
        with self._locked() as board:
            return [dict(t) for t in board["tasks"] if status in (None, t["status"])]

    # -- tools ---------------------------------------------------------------------------

    def tools(self) -> list[ToolDefinition]:
        def out(task: Task) -> str:
            return json.dumps(task, ensure_ascii=False)

        async def task_add(args: dict[str, Any]) -> str:
            return out(
                await asyncio.to_thread(
                    self.add, args["title"], args.get("detail", ""), args.get("depends_on")
                )
            )

        async def task_list(args: dict[str, Any]) -> str:
            found = await asyncio.to_thread(self.tasks, args.get("status"))
            return "\n".join(out(t) for t in found) or "(no tasks)"

        async def task_claim(args: dict[str, Any]) -> str:
            return out(await asyncio.to_thread(self.claim, args["id"]))

        async def task_release(args: dict[str, Any]) -> str:
            return out(await asyncio.to_thread(self.release, args["id"]))

        async def task_complete(args: dict[str, Any]) -> str:
            return out(await asyncio.to_thread(self.complete, args["id"], args["summary"]))

        async def task_merge(args: dict[str, Any]) -> str:
            return out(await asyncio.to_thread(self.merge, args["id"]))

        task_id = {"type": "string", "pattern": "^t[0-9]+$"}
        with_id = object_schema({"id": task_id}, ["id"])
        worktree_note = (
            " In this git repository a claim gives the task its own branch and worktree "
            "(its path is in the result): work there."
            if self.git
            else ""
        )
        tools = [
            ToolDefinition(
                "task_add",
                "Add a task to the board; depends_on lists task ids that must be done first.",
                object_schema(
                    {
                        "title": {"type": "string", "minLength": 1, "maxLength": 200},
                        "detail": {"type": "string", "maxLength": 4000},
                        "depends_on": {"type": "array", "items": task_id, "maxItems": 50},
                    },
                    ["title"],
                ),
                task_add,
            ),
            ToolDefinition(
                "task_list",
                "List the tasks on the board, optionally only those with one status.",
                object_schema({"status": {"enum": ["open", "claimed", "done"]}}, []),
                task_list,
            ),
            ToolDefinition(
                "task_claim",
                "Claim an open task whose dependencies are done." + worktree_note,
                with_id,
                task_claim,
            ),
            ToolDefinition(
                "task_release", "Give a claimed task back to the board.", with_id, task_release
            ),
            ToolDefinition(
                "task_complete",
                "Mark a claimed task done with a short summary"
                + (" (its worktree is committed)." if self.git else "."),
                object_schema(
                    {"id": task_id, "summary": {"type": "string", "minLength": 1}},
                    ["id", "summary"],
                ),
                task_complete,
            ),
        ]
        if self.git:
            tools.append(
                ToolDefinition(
                    "task_merge",
                    "Merge a completed task's branch into the current branch; conflicts are "
                    "reported and the merge undone.",
                    with_id,
                    task_merge,
                )
            )
        return tools
