"""examples/code-sprint: a team builds a package in a git repository of the shared folder,
each claim in its own worktree and branch, the lead merging every branch; the realm ends
when every task is done."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "code-sprint"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SUMMARY = "4 tides; highest 4.6 m on 2026-12-02 at 18:31"


def test_code_sprint_is_built_in_worktrees_and_merged_into_main(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=200)
    assert_clean_ending(run, "tasks_complete")
    tasks = run.chron.kinds("task")
    board = [(t["op"], t["task"], t["agent"]) for t in tasks if t["op"] in ("claim", "complete")]
    assert sorted(board[:4]) == [
        ("claim", 1, "ana"),
        ("claim", 2, "ben"),
        ("complete", 1, "ana"),
        ("complete", 2, "ben"),
    ]
    assert board[4:] == [
        ("claim", 3, "lead"),
        ("complete", 3, "lead"),
        ("claim", 4, "lead"),
        ("complete", 4, "lead"),
    ]
    # Every claim had its own worktree and branch; ana's and ben's existed side by side.
    trees = [(t["task"], t["agent"], t["branch"]) for t in tasks if t["op"] == "worktree"]
    assert sorted(trees) == [
        (1, "ana", "task/1"),
        (2, "ben", "task/2"),
        (3, "lead", "task/3"),
        (4, "lead", "task/4"),
    ]
    ops = [(t["op"], t["task"]) for t in tasks]
    assert ops.index(("worktree", 2)) < ops.index(("commit", 1))
    assert ops.index(("worktree", 1)) < ops.index(("commit", 2))
    # Completing committed each task's files on its branch, as its claimant.
    commits = {t["task"]: (t["agent"], t["files"], t["sha"]) for t in tasks if t["op"] == "commit"}
    assert commits[1][:2] == ("ana", ["tides/parse.py"])
    assert commits[2][:2] == ("ben", ["tides/report.py"])
    assert commits[3][:2] == ("lead", ["tides/cli.py"])
    assert commits[4] == ("lead", [], None)  # shipping changed no file
    # The lead merged 1 and 2 before its cli's worktree was made, and 3 before shipping.
    merges = [(t["task"], t["agent"], t["files"]) for t in tasks if t["op"] == "merge"]
    assert merges == [
        (1, "lead", ["tides/parse.py"]),
        (2, "lead", ["tides/report.py"]),
        (3, "lead", ["tides/cli.py"]),
    ]
    assert ops.index(("merge", 2)) < ops.index(("worktree", 3)) < ops.index(("merge", 3))
    assert not [t for t in tasks if t["op"] in ("conflict", "git_error", "cleanup")]

    # main holds the whole package, captured as the realm's outputs, and it runs.
    outputs = run.realm_dir / "outputs"
    assert sorted(p.name for p in (outputs / "tides").iterdir()) == [
        "__init__.py",
        "cli.py",
        "parse.py",
        "report.py",
    ]
    assert (outputs / "data" / "tides.csv").read_text().count("\n") == 5
    assert f"- 4. ship — done by lead: main runs: {SUMMARY}" in run.out
    assert f"- 3. tides/cli.py — done by lead: cli.py prints: {SUMMARY} (merged from task/3)" in (
        run.out
    )
    assert "## Task board\n4 of 4 tasks done." in run.out
    assert "concluding: tasks_complete — all 4 tasks on the board are done" in run.out
