"""``pit_up``'s start-up checks, run as a user would: each missing prerequisite is one
line naming the fix, exit code 1, no traceback, and nothing created."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.pitrun import REPO, free_port, leftover_pids, pit_env, stop_everything

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

NOBODY = 65534
FOR_DEVELOPMENT = "or set BEARPIT_SANDBOX=process for development"


def run_pit_up(
    home: Path, env: dict[str, str], prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            [*prefix, sys.executable, "manage.py", "pit_up", "examples/toolcheck"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=100,
            check=False,
        )
    finally:
        stop_everything(home)


def realm_rows(home: Path) -> int:
    path = home / "bearpit.sqlite3"
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM realms_realm").fetchone()[0])
    except sqlite3.OperationalError:  # not migrated: nothing was created
        return 0
    finally:
        db.close()


def assert_refused(done: subprocess.CompletedProcess[str], home: Path, line: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"CommandError: {line}"], done.stderr
    assert realm_rows(home) == 0
    assert not (home / "realms").exists()
    assert leftover_pids(home) == []


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield int(taken.getsockname()[1])


def test_platform_port_taken(tmp_path: Path, listening: int) -> None:
    home = tmp_path / "home"
    done = run_pit_up(home, pit_env(home, BEARPIT_PLATFORM_PORT=str(listening)))
    assert_refused(
        done,
        home,
        f"port {listening} on 127.0.0.1 is already in use (the platform needs it for the "
        "homeserver's pushes): stop what listens there, or set BEARPIT_PLATFORM_PORT to a "
        "free port",
    )
    assert not (home / "bearpit.sqlite3").exists()


def test_homeserver_port_taken(tmp_path: Path, listening: int) -> None:
    home = tmp_path / "home"
    done = run_pit_up(home, pit_env(home, BEARPIT_MATRIX_PORT=str(listening)))
    assert_refused(
        done,
        home,
        f"port {listening} on 127.0.0.1 is already in use (the homeserver needs it): stop "
        "what listens there, or set BEARPIT_MATRIX_PORT to a free port",
    )


def test_bubblewrap_missing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # Only the interpreter's folder: no /usr/bin, so no bwrap.
    env = pit_env(home, PATH=str(Path(sys.executable).parent))
    done = run_pit_up(home, env)
    assert_refused(
        done,
        home,
        "bubblewrap is not installed: install the Debian package bubblewrap "
        f"(apt-get install bubblewrap), {FOR_DEVELOPMENT}",
    )


def test_bubblewrap_unusable_here(tmp_path: Path) -> None:
    # Root without capabilities, as in an unprivileged container: bwrap is there but
    # cannot make its namespaces, and only a real run finds that out.
    home = tmp_path / "home"
    done = run_pit_up(
        home, pit_env(home), ("setpriv", "--bounding-set=-all", "--inh-caps=-all", "--")
    )
    assert_refused(
        done,
        home,
        "bubblewrap cannot start a sandbox on this host (bwrap: Creating new namespace "
        "failed: Operation not permitted): run on a host or container that allows new "
        f"namespaces with root's capabilities, {FOR_DEVELOPMENT}",
    )


def test_not_root(tmp_path: Path) -> None:
    # A home the unprivileged user can write (pytest's own tmp folder is root's alone).
    home = Path(tempfile.mkdtemp(prefix="bp-preflight-"))
    try:
        os.chown(home, NOBODY, NOBODY)
        env = pit_env(home, HOME=str(home))
        # Reading the checkout is allowed wherever it lives (a clone under root's 0700 home
        # too); nothing else of root's is kept.
        prefix = (
            "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--",
        )  # fmt: skip
        done = run_pit_up(home, env, prefix)
        assert_refused(
            done,
            home,
            "the bwrap sandbox backend runs each agent as its own host uid and needs root: "
            f"run this command as root, {FOR_DEVELOPMENT}",
        )
    finally:
        subprocess.run(["rm", "-rf", str(home)], check=False)


def test_homeserver_that_will_not_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / "homeserver"
    data.mkdir(parents=True)
    (data / "bearpit.local.signing.key").write_text("not a-key\n", encoding="utf-8")
    done = run_pit_up(home, pit_env(home, BEARPIT_MATRIX_PORT=str(free_port())))
    assert_refused(
        done,
        home,
        "the homeserver exited during start-up: Error reading signing_key: not enough values "
        f"to unpack (expected 3, got 2); fix what it names under {data} "
        f"(its log: {data / 'stderr.log'})",
    )


def test_homeserver_data_dir_not_writable(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "homeserver").write_text("a file where the folder should be\n", encoding="utf-8")
    done = run_pit_up(home, pit_env(home))
    assert_refused(
        done,
        home,
        f"cannot write the homeserver's files under {home / 'homeserver'}: File exists; "
        "make it a folder this user can write",
    )


def test_pit_homeserver_port_taken(tmp_path: Path, listening: int) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "manage.py", "pit_homeserver", "--port", str(listening)],
        cwd=REPO,
        env=pit_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"CommandError: port {listening} on 127.0.0.1 is already in use (the homeserver needs "
        "it): stop what listens there, or set BEARPIT_MATRIX_PORT to a free port"
    ]
    assert not (home / "homeserver").exists()
