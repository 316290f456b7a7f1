"""Production shape: PostgreSQL, Redis, a Celery worker with beat, and every server as its
own process. ``kill -9`` the worker mid-realm, while posts are going out, start it again,
and the realm resumes from the database and runs to the referee's verdict with every
acknowledged post chronicled once and nothing chronicled twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest

from tests.e2e.commons import CommonsSender, assert_exactly_once
from tests.e2e.pitrun import REPO, free_port, pit_env, stop_everything, with_descendants
from tests.fixtures.postgres import fresh_database
from tests.fixtures.worker import redis_url

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(300)]


@pytest.fixture
def database() -> Iterator[str]:
    with fresh_database("worker") as url:
        yield url


class Stack:
    def __init__(self, home: Path, env: dict[str, str], logs: Path) -> None:
        self.home, self.env, self.logs = home, env, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        out = (self.logs / f"{name}.log").open("ab")
        proc = subprocess.Popen(
            argv, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs[name] = proc
        return proc

    def manage(self, *args: str, timeout: float = 120) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def kill_worker(self) -> None:
        """``kill -9`` the worker and its pool, as a crash would; the sandboxes it started
        run detached and live on."""
        proc = self.procs.pop("worker")
        for pid in with_descendants([proc.pid]):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"celery" in cmd:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=20)

    def stop_all(self) -> None:
        for name in list(self.procs):
            proc = self.procs[name]
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for name in list(self.procs):
            try:
                self.procs[name].wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs.clear()
        stop_everything(self.home)


def _query(db_url: str, sql: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(db_url) as conn:
        return list(conn.execute(sql, args).fetchall())


def _wait(check: Callable[[], bool], what: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_kill_9_the_worker_mid_realm_and_it_resumes(tmp_path: Path, database: str) -> None:
    home = tmp_path / "home"
    env = pit_env(
        home,
        BEARPIT_DATABASE_URL=database,
        BEARPIT_REDIS_URL=redis_url(1),
        BEARPIT_TICK_CLAIM_S="5",
        BEARPIT_MATRIX_PORT=str(free_port()),
    )
    stack = Stack(home, env, tmp_path)
    sender: CommonsSender | None = None
    worker_argv = [
        sys.executable, "-m", "celery", "-A", "bearpit", "worker", "-B",
        "--concurrency", "2", "--loglevel", "INFO",
        "-s", str(tmp_path / "beat-schedule"),
    ]  # fmt: skip
    try:
        stack.manage("migrate", "--no-input")
        stack.start("homeserver", [sys.executable, "manage.py", "pit_homeserver"])
        stack.start(
            "platform",
            [sys.executable, "-m", "uvicorn", "bearpit.asgi:application",
             "--host", "127.0.0.1", "--port", env["BEARPIT_PLATFORM_PORT"]],
        )  # fmt: skip
        stack.start("gateway", [sys.executable, "manage.py", "pit_gateway", "--port", "-1"])
        stack.start("realmtools", [sys.executable, "manage.py", "pit_realmtools"])
        _wait(lambda: (home / "run" / "homeserver.sock").exists(), "the homeserver", 90)
        stack.start("worker", worker_argv)
        realm_id = stack.manage(
            "shell", "-c",
            "from realms.services.launch import launch_realm;"
            "from realms.tasks import provision;"
            "r = launch_realm('examples/toolcheck'); provision.delay(r.realm_id);"
            "print(r.realm_id)",
        ).strip().splitlines()[-1]  # fmt: skip

        def grants() -> list[tuple[object, ...]]:
            return _query(
                database,
                "SELECT payload FROM chronicle_event WHERE realm_id = %s AND kind = 'turn' "
                "ORDER BY id",
                realm_id,
            )

        def commons() -> list[tuple[object, ...]]:
            return _query(
                database,
                "SELECT commons_room_id FROM herald_busrealm "
                "WHERE realm_id = %s AND commons_room_id != ''",
                realm_id,
            )

        _wait(lambda: bool(commons()), "the realm's Commons", 150)
        sender = CommonsSender(home, str(commons()[0][0])).start()

        def under_way() -> bool:
            """An agent has spoken, a turn was granted, and the sender's posts are being
            chronicled: the worker dies mid-realm, not before it."""
            said = _query(
                database,
                "SELECT sender_agent, matrix_event_id FROM chronicle_message WHERE realm_id = %s",
                realm_id,
            )
            mirrored = sum(1 for _a, event in said if event in sender.acked)
            return any(a for a, _e in said) and len(grants()) >= 1 and mirrored >= 5

        _wait(under_way, "the realm under way", 150)
        at_kill = len(sender.acked)
        stack.kill_worker()
        verdicts_at_kill = _query(
            database,
            "SELECT count(*) FROM chronicle_event WHERE realm_id = %s AND kind = 'verdict'",
            realm_id,
        )
        assert verdicts_at_kill[0][0] == 0, "the kill landed after the realm's end"
        sender.wait_acked(at_kill + 20, timeout=30)  # posts go on while no worker runs

        def recoveries() -> int:
            return (tmp_path / "worker.log").read_text(errors="replace").count("recovered realms")

        before = recoveries()
        stack.start("worker", worker_argv)
        _wait(lambda: recoveries() > before, "the restarted worker's recovery", 90)
        acked = sender.stop()

        def state() -> str:
            rows = _query(database, "SELECT state FROM realms_realm WHERE realm_id = %s", realm_id)
            return str(rows[0][0])

        _wait(lambda: state() in ("archived", "interrupted"), "the realm to end", 150)
    finally:
        if sender is not None:
            sender.stop()
        stack.stop_all()
        worker_log = (tmp_path / "worker.log").read_text(errors="replace")
        log_tail = worker_log[-3000:]
    events = _query(
        database, "SELECT kind, payload FROM chronicle_event WHERE realm_id = %s ORDER BY id",
        realm_id,
    )  # fmt: skip
    lifecycle = [p["event"] for k, p in events if k == "lifecycle"]  # type: ignore[index]
    assert f"recovered realms: {{'{realm_id}': 'resumed'}}" in worker_log, log_tail
    assert lifecycle == ["provisioning", "running", "concluding", "archived"], log_tail
    verdicts = [p for k, p in events if k == "verdict"]
    assert len(verdicts) == 1 and verdicts[0]["outcome"] == "ping wins the relay"  # type: ignore[index]
    turn_grants = [
        json.dumps(p, sort_keys=True)
        for k, p in events
        if k == "turn" and "event" not in p  # type: ignore[operator]
    ]
    assert len(turn_grants) == len(set(turn_grants)) >= 2
    kickoffs = _query(
        database,
        "SELECT count(*) FROM chronicle_message WHERE realm_id = %s AND body LIKE %s",
        realm_id, "%Welcome to the realm%",
    )  # fmt: skip
    assert kickoffs[0][0] == 1
    assert len(acked) > at_kill + 20
    chronicled = _query(
        database, "SELECT matrix_event_id, body FROM chronicle_message WHERE realm_id = %s",
        realm_id,
    )  # fmt: skip
    assert_exactly_once(acked, [(str(e), str(b)) for e, b in chronicled])
