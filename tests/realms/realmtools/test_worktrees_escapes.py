"""Task worktrees against a hostile teammate: links out of the shared folder, a .git that
points elsewhere, planted hooks, ids that try to walk; and who may see and call
task_merge, and what a package may declare."""

from __future__ import annotations

from pathlib import Path

import pytest

from realms.forge import layout
from realms.plan import RealmPlan
from realms.realmtools import worktrees_sandbox
from tests.realms.packages.helpers import base_project, load, messages

from .worktrees import board, host_git, repo, shared, task_events, write_in

pytestmark = pytest.mark.timeout(180)
__all__ = ["board", "repo"]  # fixtures

PLANT = """
import os
os.symlink({target!r}, {link!r})
print("planted")
"""
HOOK = """
import os, stat, subprocess
hook = "#!/bin/sh\\necho ran > /realm/shared/hook-ran; echo ran > $HOME/hook-ran\\n"
for name in ("pre-commit", "post-commit", "commit-msg", "pre-merge-commit", "post-merge",
             "post-checkout", "reference-transaction"):
    path = f"/realm/shared/.git/hooks/{name}"
    open(path, "w").write(hook)
    os.chmod(path, 0o775)
monitor = "/realm/shared/.git/monitor.sh"
open(monitor, "w").write(hook)
os.chmod(monitor, 0o775)
subprocess.run(["git", "-c", "safe.directory=*", "config", "core.fsmonitor", monitor],
               cwd="/realm/shared", check=True)
print("planted")
"""


def test_a_worktrees_link_out_of_the_shared_folder_is_refused(realms, repo):
    rid = repo.realm_id
    orin, zed = realms.agent(repo, "orin"), realms.agent(repo, "zed")
    # zed points .worktrees at "the home folder": in orin's view, that is orin's own home.
    code = PLANT.format(target="/home/agent", link="/realm/shared/.worktrees")
    assert zed.call("run_code", code=code)["output"] == "planted\n"
    orin.call("task_add", title="bait")
    claimed = orin.call("task_claim", id=1)
    assert claimed["claimed"]["claimant"] == "orin"  # the claim stands; the worktree does not
    assert (
        ".worktrees in the shared folder is not a plain directory" in claimed["worktree"]["error"]
    )
    home = layout.home_dir(rid, "orin")
    assert not (home / "1").exists() and not (home / ".git").exists()
    (failed,) = task_events(rid, "git_error")
    assert failed["step"] == "create" and failed["agent"] == "orin"
    assert task_events(rid, "worktree") == []


def test_a_link_in_place_of_a_worktree_is_neither_followed_nor_removed(realms, repo):
    rid = repo.realm_id
    orin, zed = realms.agent(repo, "orin"), realms.agent(repo, "zed")
    orin.call("task_add", title="bait")
    orin.call("run_code", code="import os; os.makedirs('/home/agent/keep'); print('ok')")
    zed.call("run_code", code="import os; os.makedirs('/realm/shared/.worktrees'); print('ok')")
    code = PLANT.format(target="/home/agent/keep", link="/realm/shared/.worktrees/1")
    zed.call("run_code", code=code)
    claimed = orin.call("task_claim", id=1)
    assert ".worktrees/1 is not a plain directory" in claimed["worktree"]["error"]
    assert (layout.home_dir(rid, "orin") / "keep").is_dir()
    assert list((layout.home_dir(rid, "orin") / "keep").iterdir()) == []
    # Completing refuses rather than follow it (the holder can remove the link and retry).
    done = orin.call("task_complete", id=1, summary="no tree")
    assert "error" in done and ".worktrees/1 is not a plain directory" in done["error"]
    assert (shared(rid) / ".worktrees" / "1").is_symlink()


def test_a_dot_git_that_points_elsewhere_is_refused(realms, board):
    rid = board.realm_id
    orin, zed = realms.agent(board, "orin"), realms.agent(board, "zed")
    zed.call(
        "run_code",
        code="open('/realm/shared/.git', 'w').write('gitdir: /home/agent/.g\\n'); print('ok')",
    )
    orin.call("task_add", title="bait")
    claimed = orin.call("task_claim", id=1)
    assert "not a plain directory (a link or a file)" in claimed["worktree"]["error"]
    assert not (layout.home_dir(rid, "orin") / ".g").exists()


def test_hooks_and_fsmonitor_planted_in_the_repository_never_run(realms, repo):
    rid = repo.realm_id
    vela, zed = realms.agent(repo, "vela"), realms.agent(repo, "zed")
    assert zed.call("run_code", code=HOOK)["output"] == "planted\n"
    vela.call("task_add", title="page")
    path = zed.call("task_claim", id=1)["worktree"]["path"]
    zed.call("run_code", code=write_in(path, "page.md", "a page\n"))
    assert zed.call("task_complete", id=1, summary="page")["worktree"]["files"] == ["page.md"]
    assert vela.call("task_merge", id=1)["merged"] == 1
    assert not (shared(rid) / "hook-ran").exists()
    for agent in ("vela", "zed"):
        assert not (layout.home_dir(rid, agent) / "hook-ran").exists()


DRIVER = """
import subprocess
cmd = "sh -c 'echo ran > /realm/shared/driver-ran; echo ran > $HOME/driver-ran; cat'"
open("/realm/shared/.gitattributes", "w").write("* filter=evil merge=evil\\n")
for key in ("filter.evil.clean", "filter.evil.smudge", "merge.evil.driver"):
    subprocess.run(["git", "-c", "safe.directory=*", "config", key, cmd],
                   cwd="/realm/shared", check=True)
print("planted")
"""


def test_filter_and_merge_drivers_set_in_the_repository_refuse_every_step(realms, repo):
    rid = repo.realm_id
    vela, zed = realms.agent(repo, "vela"), realms.agent(repo, "zed")
    vela.call("task_add", title="page")
    zed.call("task_claim", id=1)
    assert vela.call("run_code", code=DRIVER)["output"] == "planted\n"
    done = zed.call("task_complete", id=1, summary="page")
    assert "sets commands git would run: filter.evil.clean" in done["error"]
    assert "merge.evil.driver" in done["error"]
    vela.call("task_add", title="other")
    claimed = vela.call("task_claim", id=2)
    assert "sets commands git would run" in claimed["worktree"]["error"]
    assert not (shared(rid) / "driver-ran").exists()
    for agent in ("vela", "zed"):
        assert not (layout.home_dir(rid, agent) / "driver-ran").exists()


def test_ids_that_walk_are_refused(realms, repo):
    vela = realms.agent(repo, "vela")
    vela.call("task_add", title="one")
    for bad in ("../1", "1/..", "task/1", "-1", "1 2"):
        assert "is not a task number" in vela.call("task_merge", id=bad)["error"]
    assert "start at 1" in vela.call("task_merge", id=0)["error"]
    # The script inside the sandbox checks again, whoever calls it.
    root = str(shared(repo.realm_id))
    for bad in ("..", "../1", "1/../2", "01", ""):
        with pytest.raises(worktrees_sandbox.Stop, match="not a plain number"):
            worktrees_sandbox.worktree_path(root, bad, create_parent=False)
    assert host_git(repo.realm_id, "branch", "--list") == "* main"


def test_a_merge_into_a_dirty_checkout_is_refused_and_changes_nothing(realms, repo):
    rid = repo.realm_id
    vela, zed = realms.agent(repo, "vela"), realms.agent(repo, "zed")
    vela.call("task_add", title="page")
    path = zed.call("task_claim", id=1)["worktree"]["path"]
    zed.call("run_code", code=write_in(path, "page.md", "a page\n"))
    zed.call("task_complete", id=1, summary="page")
    vela.call("run_code", code=write_in("/realm/shared", "scratch.txt", "wip\n"))
    head = host_git(rid, "rev-parse", "HEAD")
    refused = vela.call("task_merge", id=1)
    assert "uncommitted changes: scratch.txt" in refused["error"]
    assert host_git(rid, "rev-parse", "HEAD") == head
    assert task_events(rid, "merge", "conflict") == []


def test_task_merge_is_shown_to_leads_of_a_worktree_board_only(realms):
    plain = realms(spec={"mechanics": [{"kind": "task-board", "leads": ["vela"]}]})
    assert "task_merge" not in realms.agent(plain, "vela").tools()
    refused = realms.agent(plain, "vela").call("task_merge", id=1)
    assert "no worktrees" in refused["error"]
    with_trees = realms(spec={
        "environment": {"shared_folder": {"enabled": True}},
        "mechanics": [{"kind": "task-board", "leads": ["vela"], "worktrees": True}],
    })  # fmt: skip
    assert "task_merge" in realms.agent(with_trees, "vela").tools()
    assert "task_merge" in realms.agent(with_trees, "themis").tools()
    assert "task_merge" not in realms.agent(with_trees, "zed").tools()


def test_a_package_declares_worktrees_on_a_board_with_a_shared_folder(tmp_path: Path):
    board = {"kind": "task-board", "worktrees": True}
    shared_on = {"shared_folder": {"enabled": True}}
    ok = load(tmp_path / "ok", project=base_project(mechanics=[board], environment=shared_on))
    assert ok.ok, messages(ok)
    assert ok.project is not None
    plan = RealmPlan.parse(ok.project.snapshot(), {}).task_board
    assert plan is not None and plan.worktrees is True
    bad = base_project(mechanics=[board, {"kind": "sealed-submit", "worktrees": False}])
    assert messages(load(tmp_path / "bad", project=bad)) == [
        "project.json: spec.mechanics[0].worktrees: worktrees live in the shared folder: "
        "enable spec.environment.shared_folder",
        "project.json: spec.mechanics[1].worktrees: only a task-board mechanic takes worktrees",
    ]
