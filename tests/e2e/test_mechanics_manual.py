"""``pit_stop`` from another process: the realm concludes as ``manual`` at the next tick."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.pitrun import (
    REPO,
    leftover_pids,
    pit_env,
    read_chronicle,
    start_pit,
    stop_everything,
    wait_for_line,
)
from tests.e2e.test_mechanics_run import PACKAGES

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_pit_stop_concludes_a_running_realm_as_manual(tmp_path: Path) -> None:
    package = tmp_path / "vigil"
    shutil.copytree(PACKAGES / "vigil", package)
    home, log = tmp_path / "home", tmp_path / "pit_up.log"
    env = pit_env(home)
    proc = start_pit(["pit_up", str(package)], env, log)
    try:
        text = wait_for_line(log, "running: ", proc, timeout=90)
        match = re.search(r"provision: realm (\S+)", text)
        assert match is not None, text
        realm_id = match.group(1)
        stop = subprocess.run(
            [sys.executable, "manage.py", "pit_stop", realm_id],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert stop.returncode == 0, stop.stderr
        assert f"stop requested for {realm_id}" in stop.stdout
        code = proc.wait(timeout=60)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    out = log.read_text(encoding="utf-8")
    assert code == 0, out
    assert "concluding: manual — stop requested by the operator" in out
    chron = read_chronicle(home)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert chron.kinds("lifecycle")[2] == {
        "event": "concluding",
        "reason": "manual",
        "detail": "stop requested by the operator",
    }
    assert chron.realms[0]["conclusion_reason"] == "manual"
    ending = [b for a, b, _e in chron.messages if b.startswith("REALM_ENDING")]
    assert ending == ["REALM_ENDING — manual: stop requested by the operator. Stand down."]
    # Concluding wrote the archive folder, from the Chronicle it just closed.
    archive = home / "realms" / realm_id / "archive"
    manifest = json.loads((archive / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["state"] == "archived" and manifest["conclusion"]["reason"] == "manual"
    assert (archive / "report.md").read_text(encoding="utf-8").startswith("# ")
    assert left == []
