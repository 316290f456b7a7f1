"""``pit_batch``, run as a user runs it: a known mix of endings gives the right k and
interval, and a killed batch resumes without running its finished realms again.

The package's offline script ends the realm by its finish line when ``ending=win`` and
lets the time limit end it otherwise, so the grid decides each run's ending.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from realms.batch.stats import wilson
from tests.e2e.pitrun import pit_env, start_pit, stop_everything, wait_for_line

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

PACKAGE = str(Path(__file__).resolve().parents[1] / "batch" / "packages" / "two-endings")
BATCH_LINE = re.compile(r"^batch: (batch-[a-z0-9-]+) — ", re.MULTILINE)


def _batch_row(home: Path, batch_id: str) -> dict[str, Any]:
    db = sqlite3.connect(home / "bearpit.sqlite3")
    try:
        state, runs = db.execute(
            "SELECT state, runs FROM realms_batch WHERE batch_id = ?", (batch_id,)
        ).fetchone()
        realms = dict(db.execute("SELECT realm_id, state FROM realms_realm").fetchall())
    finally:
        db.close()
    return {"state": state, "runs": json.loads(runs), "realms": realms}


def _report(home: Path, batch_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (home / "batches" / batch_id / "report.json").read_text(encoding="utf-8")
    )
    return data


def _wait_for_count(log: Path, needle: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while log.read_text(encoding="utf-8").count(needle) < count:
        assert time.monotonic() < deadline, log.read_text(encoding="utf-8")
        time.sleep(0.2)


def test_a_known_mix_of_endings_gives_k_of_n_and_its_interval(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "batch.log"
    args = ["pit_batch", PACKAGE, "-n", "3", "--grid", "ending=win,lose", "--concurrency", "2"]
    proc = start_pit(args, pit_env(home), log)
    try:
        code = proc.wait(timeout=240)
    finally:
        stop_everything(home, proc)
    text = log.read_text(encoding="utf-8")
    assert code == 0, text
    match = BATCH_LINE.search(text)
    assert match, text
    data = _report(home, match.group(1))
    # The runs cycle through the grid: win, lose, win.
    assert [r["parameters"] for r in data["runs"]] == [
        {"ending": "win"},
        {"ending": "lose"},
        {"ending": "win"},
    ]
    assert [r["termination"] for r in data["runs"]] == ["message", "duration", "message"]
    interval = wilson(2, 3)
    low, high = interval.low, interval.high
    assert data["intended"] == {
        "k": 2,
        "n": 3,
        "rate": round(2 / 3, 6),
        "wilson95": [round(low, 6), round(high, 6)],
    }
    assert data["terminations"] == {"message": 2, "duration": 1}
    cells = {c["parameters"]["ending"]: (c["k"], c["n"]) for c in data["by_parameters"]}
    assert cells == {"win": (2, 2), "lose": (0, 1)}
    assert data["spend_usd"]["max"] > 0
    assert data["duration_s"]["max"] >= 6  # the lose run lasted its whole time limit
    assert "2 of 3 reached the intended ending" in text
    assert "95% CI 21% to 94%" in text
    markdown = (home / "batches" / match.group(1) / "report.md").read_text(encoding="utf-8")
    assert "**2 of 3 reached the intended ending" in markdown
    # One line per realm as it ends.
    assert len(re.findall(r"^run \d/3 \[ending=\w+\]: archived by ", text, re.MULTILINE)) == 3


def test_a_killed_batch_resumes_without_rerunning_finished_realms(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = pit_env(home)
    log = tmp_path / "first.log"
    args = ["pit_batch", PACKAGE, "-n", "2", "--grid", "ending=win,lose"]
    proc = start_pit(args, env, log)
    try:
        wait_for_line(log, "run 2/2 [ending=lose]: launched", proc, timeout=180)
        _wait_for_count(log, "provision: 1 agents started", 2, timeout=60)
        os.killpg(proc.pid, signal.SIGKILL)  # no clean-up of any kind
        proc.wait(timeout=30)
    finally:
        stop_everything(home, proc)
    text = log.read_text(encoding="utf-8")
    match = BATCH_LINE.search(text)
    assert match, text
    batch_id = match.group(1)
    before = _batch_row(home, batch_id)
    assert before["state"] == "running"
    first, second = before["runs"]
    assert before["realms"][first["realm_id"]] == "archived"
    assert before["realms"][second["realm_id"]] == "running"  # left live by the kill

    log2 = tmp_path / "resume.log"
    proc = start_pit(["pit_batch", "--resume", batch_id], env, log2)
    try:
        code = proc.wait(timeout=240)
    finally:
        stop_everything(home, proc)
    resumed = log2.read_text(encoding="utf-8")
    assert code == 0, resumed
    after = _batch_row(home, batch_id)
    assert after["state"] == "finished"
    # The finished run kept its realm; no realm of ending=win was launched again.
    assert after["runs"][0]["realm_id"] == first["realm_id"]
    assert after["runs"][0]["replaced"] == []
    assert "run 1/2" not in resumed
    # The killed realm could not be re-attached (its sandbox died): it was interrupted
    # and its run ran again under a new realm.
    assert after["runs"][1]["replaced"] == [second["realm_id"]]
    assert after["realms"][second["realm_id"]] == "interrupted"
    assert after["realms"][after["runs"][1]["realm_id"]] == "archived"
    assert len(after["realms"]) == 3
    data = _report(home, batch_id)
    assert [r["realm_id"] for r in data["runs"]] == [r["realm_id"] for r in after["runs"]]
    assert data["intended"]["k"] == 1
    assert data["intended"]["n"] == 2


def test_win_rates_count_the_players_a_verdict_names(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "batch.log"
    proc = start_pit(["pit_batch", "examples/toolcheck", "-n", "1"], pit_env(home), log)
    try:
        code = proc.wait(timeout=200)
    finally:
        stop_everything(home, proc)
    text = log.read_text(encoding="utf-8")
    assert code == 0, text
    match = BATCH_LINE.search(text)
    assert match, text
    data = _report(home, match.group(1))
    assert data["terminations"] == {"referee_verdict": 1}
    # "ping wins the relay": ping won; the umpire judged and is no contender.
    assert data["win_rates"] == {"ping": {"wins": 1, "rate": 1.0}, "pong": {"wins": 0, "rate": 0.0}}
    assert data["outcomes"] == {"ping wins the relay": 1}
