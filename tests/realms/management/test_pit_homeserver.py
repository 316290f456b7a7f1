from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from realms.herald.homeserver import free_port, healthy

pytestmark = pytest.mark.timeout(90)


def _env(home):
    return {**os.environ, "BEARPIT_HOME": str(home), "DJANGO_SETTINGS_MODULE": "bearpit.settings"}


def test_write_config_only_writes(repo_root, tmp_path):
    result = subprocess.run(
        [sys.executable, "manage.py", "pit_homeserver", "--write-config"],
        cwd=repo_root,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    registration = yaml.safe_load((tmp_path / "homeserver" / "registration.yaml").read_text())
    assert registration["url"] == "http://127.0.0.1:8765"
    assert (tmp_path / "homeserver" / "homeserver.yaml").exists()
    assert not (tmp_path / "homeserver" / "homeserver.pid").exists()


def test_foreground_homeserver_serves_until_terminated(repo_root, tmp_path):
    process = subprocess.Popen(
        [sys.executable, "manage.py", "pit_homeserver", "--port", str(free_port())],
        cwd=repo_root,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        socket_path = tmp_path / "run" / "homeserver.sock"
        deadline = time.monotonic() + 60
        while not healthy(socket_path):
            assert process.poll() is None, process.communicate()[0].decode()
            assert time.monotonic() < deadline
            time.sleep(0.1)
        pid = int((tmp_path / "homeserver" / "homeserver.pid").read_text().split()[0])
        assert pid == process.pid
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
        assert process.returncode is not None
