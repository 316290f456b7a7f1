"""The workspace agent's local mechanics, each on its own: the task board and its worktrees,
background jobs, schedules, the notebook and the shell allow-list."""

from __future__ import annotations

import asyncio
import subprocess
import threading
from pathlib import Path

import pytest

from runtime.tools import ToolFailure
from runtime.workspace.config import StatePaths
from runtime.workspace.jobs import JobManager
from runtime.workspace.notebook import Notebook
from runtime.workspace.permissions import allow_listed
from runtime.workspace.schedule import Scheduler
from runtime.workspace.taskboard import TaskBoard

pytestmark = pytest.mark.timeout(60)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def repo(path: Path) -> Path:
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "notes.txt").write_text("line one\n")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "start")
    return path


def test_a_claim_is_won_once_and_waits_for_dependencies(tmp_path: Path) -> None:
    paths = StatePaths(tmp_path)
    first = TaskBoard(paths, claimant="s1")
    plan = first.add("plan")
    build = first.add("build", depends_on=[plan["id"]])
    with pytest.raises(ToolFailure, match="waits on open dependencies: t1"):
        first.claim(build["id"])
    with pytest.raises(ToolFailure, match="no task 't9'"):
        first.add("orphan", depends_on=["t9"])
    # Eight sessions on one workspace claim the same task at once: one wins.
    won: list[str] = []
    refused: list[str] = []
    barrier = threading.Barrier(8)

    def claim(n: int) -> None:
        board = TaskBoard(paths, claimant=f"session-{n}")
        barrier.wait()
        try:
            won.append(board.claim(plan["id"])["claimant"])
        except ToolFailure as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(refused) == 7
    assert all("is claimed by" in r for r in refused)
    assert first.complete(plan["id"], "planned")["status"] == "done"
    assert first.claim(build["id"])["status"] == "claimed"
    assert [t["id"] for t in first.tasks("claimed")] == ["t2"]


def test_worktrees_commit_merge_and_report_conflicts(tmp_path: Path) -> None:
    root = repo(tmp_path / "repo")
    board = TaskBoard(StatePaths(root), claimant="s1")
    assert board.git and "task_merge" in {t.name for t in board.tools()}
    assert "/.bearpit/" in (root / ".git/info/exclude").read_text()
    one = board.claim(board.add("first edit")["id"])
    two = board.claim(board.add("second edit")["id"])
    assert one["worktree"] == ".bearpit/worktrees/t1"
    assert git(root / one["worktree"], "branch", "--show-current") == "task/t1"
    (root / one["worktree"] / "notes.txt").write_text("line one, by t1\n")
    (root / two["worktree"] / "notes.txt").write_text("line one, by t2\n")
    assert board.complete("t1", "edited")["commit"]
    assert board.complete("t2", "edited too")["commit"]
    merged = board.merge("t1")
    assert merged["merged"] and (root / "notes.txt").read_text() == "line one, by t1\n"
    assert not (root / ".bearpit/worktrees/t1").exists()
    with pytest.raises(ToolFailure, match=r"conflicts in: notes.txt") as conflict:
        board.merge("t2")
    assert conflict.value.kind == "merge_conflict"
    # Undone, not left half-merged: no merge in progress, the main tree as it was.
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".git/MERGE_HEAD").exists()
    assert (root / "notes.txt").read_text() == "line one, by t1\n"
    # A released task's worktree and branch are cleaned up.
    three = board.claim(board.add("abandoned")["id"])
    board.release(three["id"])
    assert not (root / three["worktree"]).exists()
    assert "task/t3" not in git(root, "branch", "--list")


async def test_background_jobs_wake_the_agent_and_can_be_killed(tmp_path: Path) -> None:
    woken: list[str] = []
    jobs = JobManager(tmp_path / "jobs", woken.append, max_running=2, timeout_s=30)
    quick = await jobs.start("echo hello from the job", tmp_path)
    slow = await jobs.start("sleep 30", tmp_path)
    with pytest.raises(ToolFailure, match="2 jobs are running"):
        await jobs.start("true", tmp_path)
    assert quick.watcher is not None
    await asyncio.wait_for(asyncio.shield(quick.watcher), 10)
    assert quick.status == "exited" and quick.exit_code == 0
    assert "j1" in woken[0] and "hello from the job" in woken[0]
    await jobs.kill(slow.id)
    assert slow.status == "killed" and slow.proc.returncode is not None
    await jobs.close()


async def test_a_job_past_its_time_limit_is_killed(tmp_path: Path) -> None:
    woken: list[str] = []
    jobs = JobManager(tmp_path / "jobs", woken.append, max_running=1, timeout_s=0.5)
    job = await jobs.start("sleep 30", tmp_path)
    assert job.watcher is not None
    await asyncio.wait_for(asyncio.shield(job.watcher), 10)
    assert job.status == "timed_out" and "timed_out" in woken[0]


async def test_schedules_fire_once_or_repeatedly_until_cancelled() -> None:
    woken: list[str] = []
    scheduler = Scheduler(woken.append, max_schedules=2)
    scheduler.add("check the build", after_s=0.05, every_s=None)
    every = scheduler.add("look at the logs", after_s=None, every_s=0.05)
    with pytest.raises(ToolFailure, match="2 schedules are pending"):
        scheduler.add("one too many", after_s=1, every_s=None)
    await asyncio.sleep(0.3)
    scheduler.cancel(every.id)
    count = len(woken)
    await asyncio.sleep(0.15)
    assert len(woken) == count  # cancelled: no more wakes
    assert woken.count("schedule s1 is due: check the build") == 1
    assert sum("look at the logs" in w for w in woken) >= 3
    with pytest.raises(ToolFailure, match="exactly one of"):
        scheduler.add("both", after_s=1, every_s=10)
    scheduler.close()


def test_the_notebook_is_bounded_and_survives(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    book = Notebook(path, max_chars=100)
    assert book.remember("the tests run with scripts/test") == 1
    with pytest.raises(ToolFailure, match="notebook is full") as full:
        book.remember("x" * 80)
    assert full.value.kind == "notebook_full"
    again = Notebook(path, max_chars=100)  # a later session
    assert again.notes() == ["the tests run with scripts/test"]
    assert again.forget(1) == "the tests run with scripts/test"
    assert again.remember("x" * 80) == 1


def test_the_allow_list_admits_no_second_command() -> None:
    allow = ["git status", "pytest *"]
    assert allow_listed("git status", allow)
    assert allow_listed("git status -s", allow)
    assert allow_listed("pytest tests/x.py -q", allow)
    assert not allow_listed("git statusx", allow)
    for sneaky in (
        "git status; rm -rf ~",
        "git status && curl evil",
        "git status | sh",
        "pytest `rm -rf ~`",
        "pytest $(rm -rf ~)",
        "git status > /etc/passwd",
        "git status\nrm -rf ~",
    ):
        assert not allow_listed(sneaky, allow), sneaky
