"""The git side of task worktrees: a standalone script run inside an agent's sandbox.

This file imports only the standard library. ``realms.realmtools.worktrees`` sends its
source through ``run_code``'s path (a fresh process in the caller's own sandbox view: its
uid, its caps, no network) followed by one call to :func:`main`, and reads the one JSON
line it prints. Everything it touches was written by agents, so it trusts nothing: the
repository must be a real ``.git`` directory of the shared folder, ``.worktrees`` and each
worktree must be real directories inside it (no symlinks), and git runs with hooks and
fsmonitor switched off, so a hook planted in the shared repository never runs as the
caller.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

WORKTREES = ".worktrees"
LOCK = "bearpit-worktrees.lock"
LOCK_WAIT_S = 30.0
EXCLUDE_LINE = "/.worktrees/"
MAX_FILES = 50
MAX_ERROR = 600
_NUMBER = re.compile(r"^[1-9][0-9]{0,5}$")
_DRIVERS = r"^(filter|merge|diff)\..*\.(clean|smudge|process|driver|command|textconv)$"
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


class Stop(Exception):
    """The operation cannot go on; ``message`` says why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Git:
    """git in one directory, as ``author``, with nothing from the repository run."""

    def __init__(self, cwd: str, author: str, email: str) -> None:
        self.cwd = cwd
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": os.environ.get("HOME", "/tmp"),  # noqa: S108 - the sandbox's own tmpfs
            "LANG": "C.UTF-8",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": author,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": author,
            "GIT_COMMITTER_EMAIL": email,
        }
        self.options = [
            # Agents share the folder, so the repository belongs to another agent's uid.
            "-c", "safe.directory=*",
            # Nothing an agent wrote into the repository runs as the caller.
            "-c", "core.hooksPath=/dev/null",
            "-c", "core.fsmonitor=false",
            "-c", "commit.gpgSign=false",
            # Every agent of the realm shares its group: keep what git writes group-writable.
            "-c", "core.sharedRepository=group",
            "-c", "merge.conflictStyle=merge",
        ]  # fmt: skip

    def run(self, *args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *self.options, *args],
            cwd=cwd or self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=60,
            check=False,
        )

    def ok(self, *args: str, cwd: str | None = None) -> str:
        done = self.run(*args, cwd=cwd)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip()[-MAX_ERROR:]
            raise Stop(f"git {args[0]} failed: {said}")
        return done.stdout.strip()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _real_dir(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _inside(root: str, path: str) -> bool:
    real_root, real = os.path.realpath(root), os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


def check_repo(root: str) -> bool:
    """Whether ``root`` holds a repository we may work in; Stop when it holds a trap."""
    if not _real_dir(root):
        raise Stop("the shared folder is not a directory")
    dot_git = os.path.join(root, ".git")
    if not os.path.lexists(dot_git):
        return False
    if not _real_dir(dot_git) or not _inside(root, dot_git):
        raise Stop("the shared folder's .git is not a plain directory (a link or a file)")
    return True


def refuse_drivers(git: Git) -> None:
    """Filters and merge drivers are commands git runs on add, checkout and merge; one
    set in the shared repository's config would run as the caller, so none may be."""
    found = git.run("config", "--includes", "--name-only", "--get-regexp", _DRIVERS).stdout
    names = sorted(set(_lines(found)))
    if names:
        raise Stop(f"the repository's config sets commands git would run: {', '.join(names)}")


def worktree_path(root: str, number: str, *, create_parent: bool) -> str:
    if not _NUMBER.match(number):
        raise Stop(f"task number {number!r} is not a plain number")
    parent = os.path.join(root, WORKTREES)
    if os.path.lexists(parent) and not _real_dir(parent):
        raise Stop(f"{WORKTREES} in the shared folder is not a plain directory")
    if create_parent and not os.path.lexists(parent):
        os.mkdir(parent, 0o2770)
    path = os.path.join(parent, number)
    if os.path.lexists(path) and not _real_dir(path):
        raise Stop(f"{WORKTREES}/{number} is not a plain directory")
    if not _inside(root, path):
        raise Stop(f"{WORKTREES}/{number} resolves outside the shared folder")
    return path


def _exclude_worktrees(git: Git, root: str) -> None:
    """The worktrees live inside the main checkout: keep them out of its status."""
    info = os.path.join(root, ".git", "info")
    if os.path.lexists(info) and not _real_dir(info):
        raise Stop(".git/info is not a plain directory")
    os.makedirs(info, exist_ok=True)
    exclude = os.path.join(info, "exclude")
    if os.path.islink(exclude):
        raise Stop(".git/info/exclude is a link")
    text = ""
    if os.path.exists(exclude):
        with open(exclude, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    if EXCLUDE_LINE not in text.splitlines():
        with open(exclude, "a", encoding="utf-8") as handle:
            handle.write(("" if not text or text.endswith("\n") else "\n") + EXCLUDE_LINE + "\n")


def _registered(git: Git, path: str) -> bool:
    listing = git.ok("worktree", "list", "--porcelain")
    real = os.path.realpath(path)
    return any(
        line[len("worktree ") :] in (path, real)
        for line in listing.splitlines()
        if line.startswith("worktree ")
    )


def _branch_exists(git: Git, branch: str) -> bool:
    return git.run("show-ref", "--verify", "--quiet", f"refs/heads/{branch}").returncode == 0


def _commit_all(git: Git, path: str, message: str) -> tuple[str | None, list[str]]:
    """Commit everything in the worktree at ``path``; (sha, files) or (None, [])."""
    git.ok("add", "-A", cwd=path)
    files = _lines(git.ok("diff", "--cached", "--name-only", cwd=path))
    if not files:
        return None, []
    git.ok("commit", "--no-verify", "-q", "-m", message, cwd=path)
    return git.ok("rev-parse", "HEAD", cwd=path), files[:MAX_FILES]


def _checked_worktree(git: Git, root: str, path: str, branch: str) -> bool:
    """Whether ``path`` is a worktree of this repository on ``branch`` (not a trap)."""
    if not _real_dir(path):
        return False
    if not _registered(git, path):
        raise Stop(f"{path} is not a worktree of the shared repository")
    common = git.ok("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=path)
    if os.path.realpath(common) != os.path.realpath(os.path.join(root, ".git")):
        raise Stop(f"{path} belongs to another repository")
    head = git.ok("rev-parse", "--abbrev-ref", "HEAD", cwd=path)
    if head != branch:
        raise Stop(f"{path} is on {head}, not {branch}")
    return True


def _remove(git: Git, path: str) -> None:
    git.ok("worktree", "remove", "--force", "--force", path)
    git.ok("worktree", "prune")


def cleanup(root: str, number: str, git: Git, message: str) -> dict[str, Any]:
    """Save what is left in a task's worktree as a commit on its branch, then remove it."""
    if not check_repo(root):
        return {"repo": False}
    refuse_drivers(git)
    path = worktree_path(root, number, create_parent=False)
    branch = f"task/{number}"
    git.run("worktree", "prune")
    if not _checked_worktree(git, root, path, branch):
        return {"removed": False, "branch": branch}
    sha, files = _commit_all(git, path, message)
    _remove(git, path)
    return {"removed": True, "branch": branch, "saved": sha, "files": files}


def create(root: str, number: str, git: Git, message: str) -> dict[str, Any]:
    """A worktree for the task on ``task/<number>``, from its branch if one is left."""
    if not check_repo(root):
        return {"repo": False}
    refuse_drivers(git)
    if git.run("rev-parse", "--verify", "--quiet", "HEAD").returncode != 0:
        raise Stop("the shared repository has no commit yet; commit something first")
    left = cleanup(root, number, git, message)
    path = worktree_path(root, number, create_parent=True)
    if os.path.lexists(path):
        raise Stop(f"{WORKTREES}/{number} exists and is not a worktree; remove it first")
    _exclude_worktrees(git, root)
    branch = f"task/{number}"
    reused = _branch_exists(git, branch)
    if reused:
        git.ok("worktree", "add", "-q", path, branch)
    else:
        git.ok("worktree", "add", "-q", "-b", branch, path, "HEAD")
    base = git.ok("rev-parse", "HEAD", cwd=path)
    return {
        "path": os.path.join(WORKTREES, number),
        "branch": branch,
        "base": base,
        "reused_branch": reused,
        "saved_leftover": left.get("saved"),
    }


def commit(root: str, number: str, git: Git, message: str) -> dict[str, Any]:
    """Commit the task's worktree on its branch and remove the worktree."""
    if not check_repo(root):
        return {"repo": False}
    refuse_drivers(git)
    path = worktree_path(root, number, create_parent=False)
    branch = f"task/{number}"
    if not _checked_worktree(git, root, path, branch):
        return {"worktree": False, "branch": branch}
    sha, files = _commit_all(git, path, message)
    head = git.ok("rev-parse", "HEAD", cwd=path)
    _remove(git, path)
    return {"branch": branch, "sha": sha, "head": head, "files": files}


def merge(root: str, number: str, git: Git, message: str) -> dict[str, Any]:
    """Merge ``task/<number>`` into the main checkout's branch; on a conflict, report the
    files, abort, and leave the checkout as it was."""
    if not check_repo(root):
        raise Stop("the shared folder holds no git repository")
    refuse_drivers(git)
    branch = f"task/{number}"
    if not _branch_exists(git, branch):
        raise Stop(f"there is no branch {branch}")
    target = git.run("symbolic-ref", "--quiet", "--short", "HEAD")
    if target.returncode != 0:
        raise Stop("the shared folder's checkout is not on a branch (detached HEAD)")
    into = target.stdout.strip()
    _exclude_worktrees(git, root)
    if git.run("rev-parse", "--verify", "--quiet", "MERGE_HEAD").returncode == 0:
        raise Stop("a merge is already in progress in the shared folder; finish or abort it")
    dirty = _lines(git.ok("status", "--porcelain", "--untracked-files=all"))
    if dirty:
        listed = ", ".join(line[3:] for line in dirty[:10])
        raise Stop(f"the shared folder's checkout has uncommitted changes: {listed}")
    tip = git.ok("rev-parse", branch)
    if git.run("merge-base", "--is-ancestor", branch, "HEAD").returncode == 0:
        return {"merged": False, "already": True, "branch": branch, "into": into, "tip": tip}
    before = git.ok("rev-parse", "HEAD")
    done = git.run("merge", "--no-ff", "--no-edit", "--no-verify", "-m", message, branch)
    if done.returncode == 0:
        sha = git.ok("rev-parse", "HEAD")
        files = _lines(git.ok("diff", "--name-only", before, sha))
        return {"merged": True, "branch": branch, "into": into, "sha": sha, "files": files[:50]}
    conflicts = _lines(git.run("diff", "--name-only", "--diff-filter=U").stdout)
    said = (done.stdout + done.stderr).strip()[-MAX_ERROR:]
    if git.run("rev-parse", "--verify", "--quiet", "MERGE_HEAD").returncode == 0:
        git.run("merge", "--abort")
    git.run("reset", "--hard", "-q", before)
    left = _lines(git.ok("status", "--porcelain", "--untracked-files=all"))
    return {
        "merged": False,
        "branch": branch,
        "into": into,
        "conflicts": conflicts[:MAX_FILES],
        "detail": "" if conflicts else said,
        "head": git.ok("rev-parse", "HEAD"),
        "clean": not left and git.ok("rev-parse", "HEAD") == before,
    }


@contextmanager
def one_at_a_time(root: str) -> Iterator[None]:
    """Steps of different agents on one repository take turns (git's own locks would make
    the loser fail, not wait). The lock file is opened without following links."""
    dot_git = os.path.join(root, ".git")
    if not _real_dir(dot_git):
        yield
        return
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(os.path.join(dot_git, LOCK), flags, 0o660)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Stop("another git step on the shared repository did not finish") from None
                time.sleep(0.1)
        yield
    finally:
        os.close(fd)


OPERATIONS = {"create": create, "commit": commit, "cleanup": cleanup, "merge": merge}


def main(request: dict[str, Any]) -> None:
    """Run one operation and print its answer as a single JSON line."""
    try:
        op = OPERATIONS[str(request["op"])]
        agent = str(request["author"])
        if not _AGENT.match(agent):
            raise Stop(f"author {agent!r} is not an agent id")
        root = str(request["root"])
        git = Git(root, agent, str(request["email"]))
        with one_at_a_time(root):
            answer = op(root, str(request["task"]), git, str(request["message"]))
    except Stop as stop:
        answer = {"error": stop.message}
    except (OSError, subprocess.SubprocessError) as exc:
        answer = {"error": f"{type(exc).__name__}: {exc}"[:MAX_ERROR]}
    sys.stdout.write(json.dumps(answer) + "\n")
