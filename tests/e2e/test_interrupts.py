"""Ctrl-C concludes as ``manual`` with a report; ``kill -9`` mid-realm resumes on restart."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.e2e.commons import CommonsSender, assert_exactly_once, wait_until
from tests.e2e.pitrun import (
    REPO,
    leftover_pids,
    pit_env,
    read_chronicle,
    start_pit,
    stop_everything,
    wait_for_line,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(200)]


def toolcheck_copy(tmp_path: Path, umpire_script: str | None = None) -> Path:
    package = tmp_path / "toolcheck"
    shutil.copytree(REPO / "examples" / "toolcheck", package)
    if umpire_script is not None:
        (package / "offline" / "umpire.yaml").write_text(umpire_script, encoding="utf-8")
    return package


def test_ctrl_c_concludes_manual_and_still_reports(tmp_path: Path) -> None:
    # An umpire that never opens: the realm would wait for its stall limit.
    package = toolcheck_copy(tmp_path, 'idle: ""\nsteps: []\n')
    home, log = tmp_path / "home", tmp_path / "up.log"
    proc = start_pit(["pit_up", str(package)], pit_env(home), log)
    try:
        wait_for_line(log, "running: ", proc, timeout=90)
        os.kill(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    out = log.read_text(encoding="utf-8")
    assert code == 0, out
    assert "concluding: manual — interrupted by the operator (Ctrl-C)" in out
    assert "**Concluded:** manual — interrupted by the operator (Ctrl-C)" in out
    chron = read_chronicle(home)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert chron.kinds("lifecycle")[2]["reason"] == "manual"
    assert left == []


def mounts_under(home: Path) -> list[str]:
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        return [line for line in mounts if str(home) in line]


def test_sigterm_three_times_concludes_once_as_manual(tmp_path: Path) -> None:
    # timeout, process managers and uv run send SIGTERM more than once: the second must
    # not cut short the conclusion the first began.
    package = toolcheck_copy(tmp_path, 'idle: ""\nsteps: []\n')
    home, log = tmp_path / "home", tmp_path / "up.log"
    proc = start_pit(["pit_up", str(package)], pit_env(home), log)
    try:
        wait_for_line(log, "running: ", proc, timeout=90)
        for _ in range(3):
            os.kill(proc.pid, signal.SIGTERM)
            time.sleep(0.3)
        code = proc.wait(timeout=60)
        left, mounted = leftover_pids(home), mounts_under(home)
    finally:
        stop_everything(home, proc)
    out = log.read_text(encoding="utf-8")
    assert code == 0, out
    assert "Traceback" not in out
    assert out.count("concluding: manual — interrupted by the operator (Ctrl-C)") == 1, out
    assert "**Concluded:** manual — interrupted by the operator (Ctrl-C)" in out
    chron = read_chronicle(home)
    assert [r["state"] for r in chron.realms] == ["archived"]
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert chron.kinds("lifecycle")[2]["reason"] == "manual"
    assert left == []
    assert mounted == []


def commons_room(home: Path, realm_id: str) -> str:
    db = sqlite3.connect(home / "bearpit.sqlite3")
    try:
        row = db.execute(
            "SELECT commons_room_id FROM herald_busrealm WHERE realm_id = ?", (realm_id,)
        ).fetchone()
    finally:
        db.close()
    assert row is not None and row[0], f"no Commons for {realm_id}"
    return str(row[0])


def under_way(home: Path, realm_id: str, sender: CommonsSender) -> bool:
    """An agent has spoken, a turn was granted, and the sender's posts are being
    chronicled: the realm is really running, not just started."""
    chron = read_chronicle(home, realm_id)
    spoke = any(agent for agent, _body, _event in chron.messages)
    granted = any("event" not in t for t in chron.kinds("turn"))
    mirrored = sum(1 for _a, _b, event in chron.messages if event in sender.acked)
    return spoke and granted and mirrored >= 5


def test_pit_rerun_sigterm_three_times_concludes_once_as_manual(tmp_path: Path) -> None:
    package = toolcheck_copy(tmp_path, 'idle: ""\nsteps: []\n')
    home = tmp_path / "home"
    env = pit_env(home)
    first_log, rerun_log = tmp_path / "up.log", tmp_path / "rerun.log"
    first = start_pit(["pit_up", str(package), "--realm", "idle-one"], env, first_log)
    rerun = None
    try:
        wait_for_line(first_log, "running: ", first, timeout=90)
        os.kill(first.pid, signal.SIGINT)
        assert first.wait(timeout=60) == 0, first_log.read_text(encoding="utf-8")
        rerun = start_pit(["pit_rerun", "idle-one", "--as", "idle-two"], env, rerun_log)
        wait_for_line(rerun_log, "running: ", rerun, timeout=90)
        for _ in range(3):
            os.kill(rerun.pid, signal.SIGTERM)
            time.sleep(0.3)
        code = rerun.wait(timeout=60)
        left, mounted = leftover_pids(home), mounts_under(home)
    finally:
        stop_everything(home, first, rerun)
    out = rerun_log.read_text(encoding="utf-8")
    assert code == 0, out
    assert "Traceback" not in out
    assert out.count("concluding: manual — interrupted by the operator (Ctrl-C)") == 1, out
    assert "**Concluded:** manual — interrupted by the operator (Ctrl-C)" in out
    chron = read_chronicle(home, "idle-two")
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert chron.kinds("lifecycle")[2]["reason"] == "manual"
    assert left == []
    assert mounted == []


# The kill lands in ping's turn: its model call fails while the gateway is down, and the
# realm waits for the Warden's silence re-announce (~50 s) before ping tries again.
@pytest.mark.timeout(300)
def test_kill_9_mid_realm_then_restart_resumes_to_the_verdict(tmp_path: Path) -> None:
    package = toolcheck_copy(tmp_path)
    home = tmp_path / "home"
    env = pit_env(home)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_pit(["pit_up", str(package)], env, first_log)
    second = sender = None
    try:
        text = wait_for_line(first_log, "provision: 3 agents started", first, timeout=90)
        match = re.search(r"provision: realm (\S+)", text)
        assert match is not None
        realm_id = match.group(1)
        sender = CommonsSender(home, commons_room(home, realm_id)).start()
        wait_until(lambda: under_way(home, realm_id, sender), "the realm under way", 90)
        at_kill = len(sender.acked)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        killed = read_chronicle(home, realm_id)
        assert killed.realms[0]["state"] == "running"
        assert killed.kinds("verdict") == [], "the kill landed after the realm's end"
        # Posts go on while nothing mirrors them: the homeserver must keep them.
        sender.wait_acked(at_kill + 20, timeout=30)
        second = start_pit(["pit_up", str(package), "--realm", realm_id], env, second_log)
        wait_for_line(second_log, f"recover: {realm_id} resumed", second, timeout=90)
        acked = sender.stop()
        code = second.wait(timeout=180)
    finally:
        if sender is not None:
            sender.stop()
        stop_everything(home, first, second)
    out = second_log.read_text(encoding="utf-8")
    assert code == 0, out
    assert "**Outcome:** ping wins the relay" in out
    chron = read_chronicle(home)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert len(acked) > at_kill + 20
    assert_exactly_once(acked, [(event, body) for _a, body, event in chron.messages])
    grants = [(t["round"], t["current"]) for t in chron.kinds("turn") if "event" not in t]
    assert len(grants) == len(set(grants)), grants
    assert grants[:2] == [(1, "ping"), (1, "pong")]
    kickoffs = [b for a, b, _e in chron.messages if not a and "Welcome to the realm" in b]
    assert len(kickoffs) == 1
    assert len(chron.kinds("verdict")) == 1 and len(chron.kinds("elimination")) == 1


def test_restart_with_sandboxes_gone_concludes_interrupted(tmp_path: Path) -> None:
    package = toolcheck_copy(tmp_path, 'idle: ""\nsteps: []\n')
    home = tmp_path / "home"
    env = pit_env(home)
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = start_pit(["pit_up", str(package)], env, first_log)
    second = None
    try:
        text = wait_for_line(first_log, "provision: 3 agents started", first, timeout=90)
        match = re.search(r"provision: realm (\S+)", text)
        assert match is not None
        realm_id = match.group(1)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        # The host "reboots": every sandbox of the realm is gone.
        sandboxes = leftover_pids(home / "realms" / realm_id)
        assert sandboxes
        for pid in sandboxes:
            # One may have exited on its own since it was listed (its parent is dead).
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        second = start_pit(["pit_up", str(package), "--realm", realm_id], env, second_log)
        code = second.wait(timeout=90)
    finally:
        stop_everything(home, first, second)
    out = second_log.read_text(encoding="utf-8")
    assert code == 0, out
    assert f"recover: {realm_id} interrupted" in out
    assert "**Concluded:** interrupted — restart: sandboxes of" in out
    chron = read_chronicle(home)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "interrupted"]
