"""``pit_forecast`` on an offline package: the first request it builds has exactly the
tokens the gateway metered for the agent's real first call, its range brackets what the
realm really spent, and once the package has run, the past run shows in the forecast."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.pitrun import pit_env, start_pit, stop_everything
from tests.realms.management.ranrealm import Home

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

PACKAGE = str(Path(__file__).resolve().parents[1] / "batch" / "packages" / "two-endings")
REALM = "two-endings-fc0001"


def _forecast(home: Home, *args: str) -> dict[str, Any]:
    done = home.manage("pit_forecast", PACKAGE, "--json", *args)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _spend(home: Path, realm_id: str) -> list[dict[str, Any]]:
    db = sqlite3.connect(home / "bearpit.sqlite3")
    try:
        rows = db.execute(
            "SELECT payload FROM chronicle_event WHERE realm_id = ? AND kind = 'spend' ORDER BY id",
            (realm_id,),
        ).fetchall()
    finally:
        db.close()
    return [json.loads(r[0]) for r in rows]


def test_the_forecast_matches_the_first_request_and_brackets_the_spend(tmp_path: Path) -> None:
    path = tmp_path / "home"
    home = Home(path, pit_env(path))
    before = _forecast(home, "--realm", REALM)
    (alice,) = before["agents"]
    assert before["past_runs"] == 0
    assert alice["cap_usd"] == 0.5
    assert before["binds_first"].startswith("the time limit (6s)")

    log = tmp_path / "pit_up.log"
    proc = start_pit(["pit_up", PACKAGE, "--realm", REALM], home.env, log)
    try:
        code = proc.wait(timeout=150)
    finally:
        stop_everything(path, proc)
    assert code == 0, log.read_text(encoding="utf-8")
    spend = _spend(path, REALM)
    assert spend, "the realm made no model call"
    # The forecast's prompt is the one the runtime sent, token for token.
    assert alice["first_request_tokens"] == spend[0]["tokens_in"]
    spent = sum(float(p["usd"]) for p in spend)
    assert alice["cost_low"] <= spent <= alice["cost_high"]
    assert before["cost_low"] <= spent <= before["cost_high"]

    after = _forecast(home)
    assert after["past_runs"] == 1
    assert after["past_total"]["max"] == pytest.approx(spent, rel=1e-6)
    assert after["agents"][0]["past_spend"]["median"] == pytest.approx(spent, rel=1e-6)


def test_a_bad_parameter_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    path = tmp_path / "home"
    home = Home(path, pit_env(path))
    done = home.manage("pit_forecast", PACKAGE, "-p", "ending=draw")
    assert done.returncode != 0
    assert "ending" in done.stderr
    assert "draw" in done.stderr
    ok = home.manage("pit_forecast", PACKAGE)
    assert ok.returncode == 0, ok.stderr
    assert "binds first: the time limit (6s)" in ok.stdout
    up = home.manage("pit_up", PACKAGE, "--forecast")
    assert up.returncode == 0, up.stderr
    assert "forecast: two-endings on provider offline" in up.stdout
    assert "alice (participant, " in up.stdout
    db = sqlite3.connect(path / "bearpit.sqlite3")
    try:
        # The forecast launches inside a transaction it rolls back: no realm remains.
        assert db.execute("SELECT COUNT(*) FROM realms_realm").fetchone() == (0,)
    finally:
        db.close()
