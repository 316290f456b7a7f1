"""Parallel test workers (pytest-xdist) never share a home, a uid block or a Redis database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.fixtures import worker

from .run import REPO, clean_env

pytestmark = pytest.mark.timeout(120)

PROBE = (
    "import json, os, tests.settings as s;"
    "print(json.dumps([str(s.BEARPIT_HOME), s.BEARPIT_SANDBOX_UID_BASE,"
    " s.BEARPIT_SANDBOX_UID_COUNT, os.environ.get('BEARPIT_TEST_HOME_WORKER')]))"
)


def settings_seen(env: dict[str, str]) -> list[Any]:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=True,
    )
    seen: list[Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return seen


def test_each_worker_makes_its_own_home_and_takes_its_own_uid_block(tmp_path):
    # What a worker inherits from the controller: the controller's own throw-away home.
    controller_home = tmp_path / "controller-home"
    controller_home.mkdir()
    inherited = clean_env(
        BEARPIT_HOME=str(controller_home),
        BEARPIT_TEST_HOME_OWNER="1",
        BEARPIT_TEST_HOME_WORKER="",
    )
    seen = {}
    for name in ("gw0", "gw1"):
        seen[name] = settings_seen({**inherited, "PYTEST_XDIST_WORKER": name})
    (home0, base0, count0, _), (home1, base1, count1, _) = seen["gw0"], seen["gw1"]
    try:
        assert len({home0, home1, str(controller_home)}) == 3
        assert "gw0" in home0 and "gw1" in home1
        assert count0 == count1 == worker.UID_BLOCK
        # Neither block overlaps the other, nor the embedded default's 200000..209999.
        assert base0 == 210000 and base1 == 220000
    finally:
        for home in (home0, home1):
            subprocess.run(["rm", "-rf", home], check=False)


def test_a_process_a_worker_starts_keeps_the_workers_choices(tmp_path):
    home = tmp_path / "worker-home"
    home.mkdir()
    child = clean_env(
        PYTEST_XDIST_WORKER="gw1",
        BEARPIT_HOME=str(home),
        BEARPIT_TEST_HOME_OWNER="1",
        BEARPIT_TEST_HOME_WORKER="gw1",
        BEARPIT_SANDBOX_UID_BASE="220000",
        BEARPIT_SANDBOX_UID_COUNT="10000",
    )
    assert settings_seen(child) == [str(home), 220000, 10000, "gw1"]


def test_a_home_the_user_chose_gets_one_folder_per_worker(tmp_path):
    env = clean_env(BEARPIT_HOME=str(tmp_path), PYTEST_XDIST_WORKER="gw3")
    home, base, _, _ = settings_seen(env)
    assert home == str(tmp_path / "gw3")
    assert base == 240000
    # A plain run (no xdist) uses the chosen home as it is, with the default uids.
    home, base, _, _ = settings_seen(clean_env(BEARPIT_HOME=str(tmp_path)))
    assert (home, base) == (str(tmp_path), 200000)


def test_redis_databases_are_per_worker_and_keep_the_server():
    env = {"BEARPIT_TEST_REDIS_URL": "redis://127.0.0.1:41234/9"}
    urls = {
        worker.redis_url(slot, {**env, "PYTEST_XDIST_WORKER": name})
        for name in ("gw0", "gw1", "gw2")
        for slot in range(worker.REDIS_SLOTS)
    }
    assert len(urls) == 3 * worker.REDIS_SLOTS
    assert all(url.startswith("redis://127.0.0.1:41234/") for url in urls)
    assert max(int(url.rsplit("/", 1)[1]) for url in urls) <= 15
    assert worker.redis_url(0, {}) == "redis://127.0.0.1:6379/1"
    with pytest.raises(ValueError):
        worker.redis_url(worker.REDIS_SLOTS, {})


def test_the_environment_of_this_run_names_its_own_worker():
    assert os.environ.get("BEARPIT_TEST_HOME_WORKER") == (
        os.environ.get("PYTEST_XDIST_WORKER") or ""
    )
