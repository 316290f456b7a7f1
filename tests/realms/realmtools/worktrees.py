"""Shared parts of the worktree tests: a board with worktrees, three real bwrap sandboxes
sharing a folder, and git read from the host without running anything of the repo's."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.forge import layout
from realms.forge.models import Sandbox
from realms.forge.services import release_realm, stop_realm_sandboxes
from realms.models import Realm
from tests.realms.forge.conftest import UID_BASE, script_request, start

SLEEPER = "import time; time.sleep(300)"
SPEC = {
    "environment": {"shared_folder": {"enabled": True}},
    "mechanics": [{"kind": "task-board", "lease": "30s", "leads": ["vela"], "worktrees": True}],
}
INIT_REPO = """
import os, subprocess
def git(*a):
    done = subprocess.run(["git", "-c", "safe.directory=*", *a], cwd="/realm/shared",
                          capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "orin", "GIT_AUTHOR_EMAIL": "o@x",
                               "GIT_COMMITTER_NAME": "orin", "GIT_COMMITTER_EMAIL": "o@x"})
    assert done.returncode == 0, done.stderr
git("init", "-q", "-b", "main")
open("/realm/shared/notes.md", "w").write("# Notes\\n\\nline one\\n")
git("add", "-A")
git("commit", "-q", "-m", "start")
print("repo ready")
"""


def write_in(path: str, name: str, text: str) -> str:
    """run_code that writes ``text`` to ``path/name`` inside the sandbox."""
    return (
        f"import os; os.makedirs(os.path.dirname({path + '/' + name!r}), exist_ok=True)\n"
        f"open({path + '/' + name!r}, 'w').write({text!r}); print('written')"
    )


def host_git(realm_id: str, *args: str) -> str:
    """git on the host, as the test sees the folder; nothing of the repository runs and
    nothing is written (no index refresh, which would leave a root-owned index)."""
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "-c", "core.hooksPath=/dev/null", *args],
        cwd=layout.shared_dir(realm_id),
        env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()


def task_events(realm_id: str, *ops: str) -> list[dict[str, Any]]:
    events = Event.objects.filter(realm_id=realm_id, kind=Kind.TASK).order_by("id")
    return [e.payload for e in events if not ops or e.payload["op"] in ops]


def uid_of(realm_id: str, agent_id: str) -> int:
    return Sandbox.objects.get(
        realm_id=realm_id, agent_id=agent_id, state=Sandbox.State.RUNNING
    ).host_uid


def shared(realm_id: str) -> Path:
    return layout.shared_dir(realm_id)


@pytest.fixture
def board(realms: Any, settings: Any) -> Iterator[Realm]:
    """A running realm with a worktree board and three live sandboxes; no repo yet."""
    settings.BEARPIT_SANDBOX = "bwrap"
    settings.BEARPIT_SANDBOX_UID_BASE = UID_BASE
    settings.BEARPIT_SANDBOX_UID_COUNT = 500
    layout.sockets_dir().mkdir(parents=True, exist_ok=True)
    layout.sockets_dir().chmod(0o755)
    realm = realms(spec=SPEC)
    agents = ("orin", "vela", "zed")
    start(realm.realm_id, [script_request(a, SLEEPER) for a in agents], shared_folder=True)
    yield realm
    stop_realm_sandboxes(realm.realm_id, "test over")
    release_realm(realm.realm_id)


@pytest.fixture
def repo(board: Realm, realms: Any) -> Realm:
    """The board's realm once orin has made a repository of the shared folder."""
    made = realms.agent(board, "orin").call("run_code", code=INIT_REPO)
    assert made == {"exit_code": 0, "output": "repo ready\n"}, made
    return board
