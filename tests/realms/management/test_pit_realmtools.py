"""``manage.py pit_realmtools`` serves the socket and shuts down cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from realms.realmtools.identity import mint_token
from realms.realmtools.server import NO_TOKEN
from tests.realms.realmtools.conftest import uds_client

pytestmark = pytest.mark.timeout(60)


def _post(path, token):
    async def go():
        async with uds_client(path, token) as http:
            return await http.post(
                "http://realmtools/mcp",
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"Accept": "application/json, text/event-stream"},
            )

    return asyncio.run(go())


def test_the_command_serves_until_terminated(tmp_path, repo_root):
    sock = tmp_path / "realmtools.sock"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "pit_realmtools", "--socket", str(sock)],
        cwd=repo_root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        refused = None
        while refused is None:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "the server never answered"
            try:
                refused = _post(sock, None)
            except httpx.TransportError:  # not bound or not listening yet
                time.sleep(0.1)
        assert (refused.status_code, refused.json()["error"]["message"]) == (401, NO_TOKEN)
        assert _post(sock, mint_token("r", "a", "player", [])).status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=20)
    assert code == 0
    assert not sock.exists()
