"""Task worktrees: a git worktree and branch of the shared folder's repository per claim.

When the board declares ``worktrees: true`` and the shared folder holds a git repository,
a claim of task N gives the claimant ``.worktrees/N`` on branch ``task/N``; completing
the task commits the worktree (author: the claimant) and removes it, leaving the branch
for a lead to merge; a release, a block or an expired lease saves what was left in the
worktree as a commit on the branch and removes the worktree (the branch is kept, so the
next claimant carries on from it).

Git never runs on the host: each step is ``worktrees_sandbox`` run through the path
``run_code`` uses, in the sandbox of the agent on whose behalf it runs, so that agent's
uid, caps and view hold. Every step that changes the repository is a ``task`` event.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from django.conf import settings

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.forge import layout
from realms.forge.backends import SandboxError
from realms.forge.runcode import MAX_CODE_CHARS, RunCodeError
from realms.forge.runcode import run_code as forge_run_code
from realms.forge.services import live_sandbox
from realms.plan import TaskBoardPlan
from realms.realmtools.context import Caller
from realms.realmtools.errors import Refusal

log = logging.getLogger(__name__)

SCRIPT = (Path(__file__).parent / "worktrees_sandbox.py").read_text(encoding="utf-8")
if len(SCRIPT) > MAX_CODE_CHARS - 1000:  # the request and the call take the rest
    raise RuntimeError("worktrees_sandbox.py outgrew what run_code may send")
NO_REPO = "the shared folder holds no git repository (no .git), so this claim has no worktree"


class NoSandbox(Exception):
    """Nobody's sandbox is running to run git in."""


def enabled(board: TaskBoardPlan | None) -> bool:
    return board is not None and board.worktrees


def root_in_view(realm_id: str, agent_id: str) -> str:
    """Where the shared folder is in this agent's sandbox view."""
    row = live_sandbox(realm_id, agent_id)
    if row is None:
        raise NoSandbox(f"{agent_id}'s sandbox is not running")
    if row.backend == "process":  # no mount namespace: the host's own path
        return str(layout.shared_dir(realm_id))
    return layout.SANDBOX_SHARED


def branch_of(number: int) -> str:
    return f"task/{number}"


def _email(realm_id: str, agent_id: str) -> str:
    return f"{agent_id}@{realm_id}.bearpit.invalid"


def run_git(
    realm_id: str, run_as: str, op: str, number: int, author: str, message: str
) -> dict[str, Any]:
    """One ``worktrees_sandbox`` operation in ``run_as``'s sandbox; its JSON answer."""
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ValueError(f"task number {number!r}")
    request = {
        "op": op,
        "root": root_in_view(realm_id, run_as),
        "task": str(number),
        "author": author,
        "email": _email(realm_id, author),
        "message": message,
    }
    code = f"{SCRIPT}\nmain(json.loads({json.dumps(json.dumps(request))}))\n"
    try:
        ran = forge_run_code(realm_id, run_as, code, timeout=settings.BEARPIT_SANDBOX_EXEC_TIMEOUT)
    except RunCodeError as exc:
        raise NoSandbox(str(exc)) from None
    if ran.timed_out:
        return {"error": "git did not finish in time"}
    last = ran.output.strip().splitlines()[-1:] or [""]
    try:
        answer = json.loads(last[0])
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return {"error": f"git step gave no answer (exit {ran.exit_code}): {ran.output[-300:]}"}
    return answer


def record(realm_id: str, op: str, number: int, agent: str | None, **fields: Any) -> None:
    record_event(realm_id, Kind.TASK, {"op": op, "task": number, "agent": agent, **fields})


def _failed(realm_id: str, number: int, agent: str | None, step: str, error: str) -> None:
    record(realm_id, "git_error", number, agent, step=step, error=error)


def on_claim(caller: Caller, number: int) -> dict[str, Any] | None:
    """The claimant's worktree, after its claim is committed; what the claim answers."""
    if not enabled(caller.facts.plan.task_board):
        return None
    who = caller.agent_id
    try:
        root = root_in_view(caller.realm_id, who)
        message = f"task {number}: work left by an earlier claimant"
        got = run_git(caller.realm_id, who, "create", number, who, message)
    except NoSandbox as exc:
        got = {"error": str(exc)}
    if got.get("repo") is False:
        return {"note": NO_REPO}
    if "error" in got:
        _failed(caller.realm_id, number, who, "create", str(got["error"]))
        return {"error": f"no worktree: {got['error']}"}
    path = f"{root}/{got['path']}"
    record(
        caller.realm_id,
        "worktree",
        number,
        who,
        path=got["path"],
        branch=got["branch"],
        base=got["base"],
        reused_branch=bool(got.get("reused_branch")),
    )
    return {
        "path": path,
        "branch": got["branch"],
        "base": got["base"],
        "note": f"work in {path}; task_complete commits it on {got['branch']}",
    }


def on_complete(caller: Caller, number: int, title: str, summary: str) -> dict[str, Any] | None:
    """Commit the claimant's worktree before the task is marked done. A git failure
    refuses the completion, so a done task's work is always on its branch."""
    if not enabled(caller.facts.plan.task_board):
        return None
    who = caller.agent_id
    message = f"task {number}: {title}\n\n{summary}\n"
    try:
        got = run_git(caller.realm_id, who, "commit", number, who, message)
    except NoSandbox as exc:
        raise Refusal(f"cannot commit task {number}'s worktree: {exc}") from None
    if got.get("repo") is False or got.get("worktree") is False:
        return None
    if "error" in got:
        _failed(caller.realm_id, number, who, "commit", str(got["error"]))
        raise Refusal(f"task {number} was not completed: committing its worktree: {got['error']}")
    record(
        caller.realm_id,
        "commit",
        number,
        who,
        branch=got["branch"],
        sha=got["sha"],
        head=got["head"],
        files=got["files"],
    )
    return {"branch": got["branch"], "commit": got["sha"], "files": got["files"]}


def _candidates(caller_or_none: str | None, claimant: str, roster: tuple[str, ...]) -> list[str]:
    first = [a for a in (caller_or_none, claimant) if a]
    return [*dict.fromkeys([*first, *roster])]


def on_release(
    realm_id: str,
    board: TaskBoardPlan | None,
    number: int,
    claimant: str,
    *,
    by: str | None,
    reason: str,
    roster: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """Clean up the worktree of a task that left ``claimant``'s hands (``reason``:
    release, block or expire). Git runs in ``by``'s sandbox; for an expiry (``by`` None)
    in the claimant's, or, when that is not running, in the first running one of
    ``roster``. Never raises for git's sake: a failure is chronicled and the next claim
    of the task cleans up before it creates a worktree."""
    if not enabled(board) or not claimant:
        return None
    message = f"task {number}: work in progress of {claimant} ({reason})"
    got: dict[str, Any] = {"error": "no sandbox is running to clean up in"}
    for run_as in _candidates(by, claimant, () if by else roster):
        try:
            got = run_git(realm_id, run_as, "cleanup", number, claimant, message)
        except NoSandbox as exc:
            got = {"error": str(exc)}
            continue
        except (SandboxError, OSError) as exc:
            got = {"error": f"{type(exc).__name__}: {exc}"}
        break
    if got.get("repo") is False or got.get("removed") is False:
        return None
    if "error" in got:
        _failed(realm_id, number, by, "cleanup", str(got["error"]))
        log.warning("worktree of task %s in %s not cleaned up: %s", number, realm_id, got["error"])
        return {"error": f"worktree not cleaned up: {got['error']}"}
    record(
        realm_id,
        "cleanup",
        number,
        by,
        claimant=claimant,
        reason=reason,
        branch=got["branch"],
        saved=got.get("saved"),
        files=got.get("files") or [],
    )
    return {"removed": True, "branch": got["branch"], "saved": got.get("saved")}
