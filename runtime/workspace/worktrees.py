"""Git worktrees for tasks, when the workspace is a git repository.

A claimed task gets its own branch ``task/<id>`` checked out in ``.bearpit/worktrees/<id>``;
completing it commits what changed there; ``task_merge`` merges the branch into the
workspace's current branch, and a conflict is reported with its files and the merge
undone (never left half-done, never resolved silently). A released task's worktree and
branch are removed. The state folder is kept out of git through ``.git/info/exclude``.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from runtime.tools import ToolFailure

# Used only when the repository has no identity of its own, so a commit never fails on it.
_IDENTITY = ("-c", "user.name=Bearpit agent", "-c", "user.email=agent@bearpit.invalid")
GIT_TIMEOUT_S = 60


@dataclass(frozen=True)
class Git:
    root: Path

    def run(self, *args: str, cwd: Path | None = None, check: bool = True) -> str:
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=cwd or self.root,
                capture_output=True,
                text=True,
                timeout=GIT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ToolFailure(f"git {args[0]} did not finish within {GIT_TIMEOUT_S}s") from None
        if check and done.returncode != 0:
            raise ToolFailure(f"git {args[0]}: {(done.stderr or done.stdout).strip()[:800]}")
        return done.stdout.strip()

    def is_repo(self) -> bool:
        try:
            top = self.run("rev-parse", "--show-toplevel", check=False)
        except (ToolFailure, OSError):
            return False
        return bool(top) and Path(top).resolve() == self.root.resolve()

    def has_commit(self) -> bool:
        return bool(self.run("rev-parse", "--verify", "-q", "HEAD", check=False))

    def _identity(self) -> tuple[str, ...]:
        return () if self.run("config", "user.email", check=False) else _IDENTITY

    def exclude_state(self, state_dir: str) -> None:
        exclude = Path(self.run("rev-parse", "--git-path", "info/exclude"))
        exclude = exclude if exclude.is_absolute() else self.root / exclude
        lines = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
        if f"/{state_dir}/" not in lines:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            exclude.write_text("\n".join([*lines, f"/{state_dir}/"]) + "\n", encoding="utf-8")

    def add_worktree(self, path: Path, branch: str) -> None:
        if not self.has_commit():
            raise ToolFailure("the repository has no commit yet, so no worktree can branch off")
        self.run("worktree", "add", "-b", branch, str(path))

    def commit_all(self, path: Path, message: str) -> str:
        """Commit everything changed in the worktree; the new commit, or '' if unchanged."""
        self.run("add", "-A", cwd=path)
        if not self.run("status", "--porcelain", cwd=path):
            return ""
        self.run(*self._identity(), "commit", "-q", "-m", message, cwd=path)
        return self.run("rev-parse", "--short", "HEAD", cwd=path)

    def merge(self, branch: str) -> str:
        """Merge ``branch`` into the current branch; ToolFailure naming the conflicts."""
        args = (*self._identity(), "merge", "--no-ff", "--no-edit", branch)
        try:
            self.run(*args)
        except ToolFailure:
            conflicted = self.run("diff", "--name-only", "--diff-filter=U", check=False)
            if not conflicted:
                raise
            self.run("merge", "--abort", check=False)
            files = ", ".join(conflicted.splitlines())
            raise ToolFailure(
                f"merging {branch} conflicts in: {files}. The merge was undone; resolve it in "
                "the task's worktree (merge the current branch there) and merge again.",
                kind="merge_conflict",
            ) from None
        return self.run("rev-parse", "--short", "HEAD")

    def remove_worktree(self, path: Path, branch: str, *, delete_branch: bool) -> None:
        if path.exists():
            self.run("worktree", "remove", "--force", str(path), check=False)
        self.run("worktree", "prune", check=False)
        if delete_branch:
            self.run("branch", "-D", branch, check=False)
