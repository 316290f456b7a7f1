"""Task worktrees in real bwrap sandboxes: created on claim, committed on complete, merged
by a lead (a conflict reported, the checkout left clean), cleaned up on release and on an
expired lease."""

from __future__ import annotations

import os

import pytest

from chronicle.report import render_report
from realms.plan import plan_of
from realms.realmtools.models import Task
from realms.realmtools.taskboard_leases import expire_leases

from .test_concurrency_and_audit import _together
from .worktrees import board, host_git, repo, shared, task_events, uid_of, write_in

pytestmark = pytest.mark.timeout(180)

RESOLVE = """
import subprocess
git = ["git", "-c", "safe.directory=*", "-c", "user.name=zed", "-c", "user.email=z@x"]
done = subprocess.run([*git, "merge", "task/2"], cwd="TREE", capture_output=True, text=True)
print("conflict in notes.md" if "CONFLICT" in done.stdout else done.stdout + done.stderr)
open("TREE/notes.md", "w").write("# Notes\\n\\nline ONE (and 1)\\n")
subprocess.run([*git, "add", "notes.md"], cwd="TREE", check=True)
"""
__all__ = ["board", "repo"]  # fixtures


def test_a_claim_gets_a_worktree_and_complete_commits_it_as_the_claimant(realms, repo):
    rid = repo.realm_id
    orin, zed = realms.agent(repo, "orin"), realms.agent(repo, "zed")
    orin.call("task_add", title="write the map")
    claimed = zed.call("task_claim", id=1)
    tree = claimed["worktree"]
    assert tree["path"] == "/realm/shared/.worktrees/1" and tree["branch"] == "task/1"
    on_host = shared(rid) / ".worktrees" / "1"
    assert (on_host / "notes.md").read_text() == "# Notes\n\nline one\n"
    # Git ran in zed's own sandbox: the checkout belongs to zed's uid.
    assert os.stat(on_host / "notes.md").st_uid == uid_of(rid, "zed")
    assert host_git(rid, "status", "--porcelain") == ""  # .worktrees stays out of main's status

    assert zed.call("run_code", code=write_in(tree["path"], "map.md", "# Map\n"))["exit_code"] == 0
    done = zed.call("task_complete", id=1, summary="the map")
    assert done["worktree"]["branch"] == "task/1"
    assert done["worktree"]["files"] == ["map.md"]
    sha = done["worktree"]["commit"]
    assert host_git(rid, "log", "-1", "--format=%H %an %ae %s", "task/1") == (
        f"{sha} zed zed@{rid}.bearpit.invalid task 1: write the map"
    )
    assert not on_host.exists()  # the work is on the branch; the worktree is gone
    assert host_git(rid, "worktree", "list").count("\n") == 0  # only the main checkout
    assert not (shared(rid) / "map.md").exists()  # nothing in main until it is merged

    ops = [(e["op"], e["agent"]) for e in task_events(rid)]
    assert ops == [
        ("add", "orin"),
        ("claim", "zed"),
        ("worktree", "zed"),
        ("commit", "zed"),
        ("complete", "zed"),
    ]
    (made,) = task_events(rid, "worktree")
    assert made["branch"] == "task/1" and made["path"] == ".worktrees/1"
    (commit,) = task_events(rid, "commit")
    assert commit["sha"] == sha and commit["files"] == ["map.md"]


def test_a_lead_merges_a_done_task_once(realms, repo):
    rid = repo.realm_id
    vela, zed = realms.agent(repo, "vela"), realms.agent(repo, "zed")
    zed.call("task_add", title="legend")
    path = zed.call("task_claim", id=1)["worktree"]["path"]
    zed.call("run_code", code=write_in(path, "legend.md", "a legend\n"))
    assert "only the referee or a lead" in zed.call("task_merge", id=1)["error"]
    assert "only a done task" in vela.call("task_merge", id=1)["error"]
    zed.call("task_complete", id=1, summary="legend written")

    merged = vela.call("task_merge", id="T1")
    assert merged["merged"] == 1 and merged["into"] == "main"
    assert merged["files"] == ["legend.md"]
    assert (shared(rid) / "legend.md").read_text() == "a legend\n"
    assert host_git(rid, "log", "-1", "--format=%an %s") == "vela Merge task 1: legend"
    assert host_git(rid, "status", "--porcelain") == ""
    again = vela.call("task_merge", id=1)
    assert again == {"merged": 1, "already": True, "branch": "task/1", "into": "main"}
    (event,) = task_events(rid, "merge")
    assert event["agent"] == "vela" and event["sha"] == merged["commit"]
    assert "- 1. legend — done by zed: legend written (merged from task/1)" in render_report(rid)


def test_a_merge_conflict_is_reported_aborted_and_leaves_the_checkout_clean(realms, repo):
    rid = repo.realm_id
    vela, orin, zed = (realms.agent(repo, a) for a in ("vela", "orin", "zed"))
    vela.call("task_add", title="first edit")
    vela.call("task_add", title="second edit")
    one = orin.call("task_claim", id=1)["worktree"]["path"]
    two = zed.call("task_claim", id=2)["worktree"]["path"]
    orin.call("run_code", code=write_in(one, "notes.md", "# Notes\n\nline ONE\n"))
    zed.call("run_code", code=write_in(two, "notes.md", "# Notes\n\nline 1\n"))
    zed.call("run_code", code=write_in(two, "extra.md", "extra\n"))
    orin.call("task_complete", id=1, summary="first")
    zed.call("task_complete", id=2, summary="second")
    assert vela.call("task_merge", id=1)["merged"] == 1
    head = host_git(rid, "rev-parse", "HEAD")

    clash = vela.call("task_merge", id=2)
    assert clash["conflicts"] == ["notes.md"] and clash["clean"] is True
    assert "conflicts in: notes.md" in clash["error"] and "aborted" in clash["error"]
    # The checkout is as it was: same commit, nothing staged or left over, no merge pending.
    assert host_git(rid, "rev-parse", "HEAD") == head
    assert host_git(rid, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (shared(rid) / ".git" / "MERGE_HEAD").exists()
    assert not (shared(rid) / "extra.md").exists()
    assert (shared(rid) / "notes.md").read_text() == "# Notes\n\nline ONE\n"
    (event,) = task_events(rid, "conflict")
    assert event["files"] == ["notes.md"] and event["clean"] is True and event["agent"] == "vela"
    assert "- 2. second edit — done by zed: second (merge conflict in notes.md)" in render_report(
        rid
    )

    # Resolving as the docs say: a new task whose claimant merges task/2 in its worktree.
    vela.call("task_add", title="resolve notes.md")
    three = zed.call("task_claim", id=3)["worktree"]["path"]
    resolve = RESOLVE.replace("TREE", three)
    assert zed.call("run_code", code=resolve)["output"] == "conflict in notes.md\n"
    zed.call("task_complete", id=3, summary="kept ONE")
    assert vela.call("task_merge", id=3)["merged"] == 3
    assert (shared(rid) / "notes.md").read_text() == "# Notes\n\nline ONE (and 1)\n"
    assert (shared(rid) / "extra.md").read_text() == "extra\n"
    assert vela.call("task_merge", id=2)["already"] is True


def test_a_release_saves_the_work_on_the_branch_and_removes_the_worktree(realms, repo):
    rid = repo.realm_id
    orin, zed = realms.agent(repo, "orin"), realms.agent(repo, "zed")
    orin.call("task_add", title="draft")
    path = zed.call("task_claim", id=1)["worktree"]["path"]
    zed.call("run_code", code=write_in(path, "draft.md", "half a draft\n"))
    released = zed.call("task_release", id=1)
    assert released["worktree"]["removed"] is True
    saved = released["worktree"]["saved"]
    assert not (shared(rid) / ".worktrees" / "1").exists()
    # Branch kept, with what zed had left, authored by zed.
    assert host_git(rid, "log", "-1", "--format=%H %an", "task/1") == f"{saved} zed"
    (cleanup,) = task_events(rid, "cleanup")
    assert cleanup["reason"] == "release" and cleanup["claimant"] == "zed"
    assert cleanup["files"] == ["draft.md"] and cleanup["saved"] == saved

    # The next claimant carries on from the branch.
    again = orin.call("task_claim", id=1)["worktree"]
    assert again["base"] == saved
    assert (shared(rid) / ".worktrees" / "1" / "draft.md").read_text() == "half a draft\n"
    assert task_events(rid, "worktree")[-1]["reused_branch"] is True
    blocked = orin.call("task_block", id=1, reason="needs the survey")
    assert blocked["worktree"]["removed"] is True and blocked["worktree"]["saved"] is None
    assert [e["reason"] for e in task_events(rid, "cleanup")] == ["release", "block"]


def test_an_expired_lease_cleans_up_the_worktree_in_the_claimants_sandbox(realms, repo):
    rid = repo.realm_id
    orin, zed = realms.agent(repo, "orin"), realms.agent(repo, "zed")
    orin.call("task_add", title="survey")
    path = zed.call("task_claim", id=1)["worktree"]["path"]
    zed.call("run_code", code=write_in(path, "survey.md", "3 pools\n"))
    Task.objects.filter(realm=repo, number=1).update(lease_until_ms=1)
    board = plan_of(repo).task_board
    assert board is not None and board.worktrees
    assert expire_leases(rid, board) == [1]
    assert not (shared(rid) / ".worktrees" / "1").exists()
    (cleanup,) = task_events(rid, "cleanup")
    assert cleanup["agent"] is None and cleanup["reason"] == "expire"
    assert cleanup["claimant"] == "zed" and cleanup["files"] == ["survey.md"]
    assert host_git(rid, "log", "-1", "--format=%an", "task/1") == "zed"
    assert [e["op"] for e in task_events(rid)][-2:] == ["expire", "cleanup"]


def test_without_a_repository_a_claim_says_so_and_works_as_before(realms, board):
    orin = realms.agent(board, "orin")
    orin.call("task_add", title="no repo")
    claimed = orin.call("task_claim", id=1)
    assert "holds no git repository" in claimed["worktree"]["note"]
    assert orin.call("task_complete", id=1, summary="fine")["completed"] == 1
    assert [e["op"] for e in task_events(board.realm_id)] == ["add", "claim", "complete"]
    assert not (shared(board.realm_id) / ".worktrees").exists()


def test_agents_working_the_repository_at_once_all_get_their_steps(realms, repo):
    rid = repo.realm_id
    orin, vela, zed = (realms.agent(repo, a) for a in ("orin", "vela", "zed"))
    for title in ("a", "b", "c"):
        vela.call("task_add", title=title)
    claims = _together((orin, "task_claim", {"id": 1}), (zed, "task_claim", {"id": 2}))
    assert all("path" in c["worktree"] for c in claims), claims
    orin.call("run_code", code=write_in(claims[0]["worktree"]["path"], "a.md", "a\n"))
    zed.call("run_code", code=write_in(claims[1]["worktree"]["path"], "b.md", "b\n"))
    # Two commits and a new worktree on one repository at the same moment.
    steps = _together(
        (orin, "task_complete", {"id": 1, "summary": "a"}),
        (zed, "task_complete", {"id": 2, "summary": "b"}),
        (vela, "task_claim", {"id": 3}),
    )
    assert [s["worktree"].get("files") for s in steps[:2]] == [["a.md"], ["b.md"]], steps
    assert steps[2]["worktree"]["branch"] == "task/3"
    assert task_events(rid, "git_error") == []
    authors = host_git(rid, "log", "--format=%an", "task/1", "task/2", "--not", "main")
    assert sorted(authors.splitlines()) == ["orin", "zed"]
