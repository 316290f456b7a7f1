"""``python -m runtime BIRTH.json`` as the platform starts it: a real process, real signals."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from tests.runtime.conftest import VIRTUAL_KEY, birth
from tests.runtime.provider import reply

pytestmark = pytest.mark.timeout(60)


async def test_runtime_process_wakes_on_a_timer_and_stops_cleanly_on_sigterm(tmp_path, provider):
    provider.script = [reply("tick handled")]
    config = birth(tmp_path, provider.socket, timers=[{"every_s": 0.3, "message": "tick"}])
    path = tmp_path / "home" / ".bearpit" / "birth.json"
    path.parent.mkdir(parents=True)
    path.write_text(config.model_dump_json())
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "runtime", str(path), stderr=asyncio.subprocess.PIPE
    )
    try:
        for _ in range(300):
            if provider.requests:
                break
            await asyncio.sleep(0.05)
        assert provider.requests, "the runtime made no model call"
        assert "tick" in provider.requests[0]["messages"][-1]["content"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, stderr.decode()
    lines = Path(config.trace_path).read_text().splitlines()
    types = [json.loads(line)["type"] for line in lines]
    assert types[0] == "run_start" and types[-1] == "run_end"
    assert "turn_end" in types
    assert VIRTUAL_KEY not in Path(config.trace_path).read_text()


# Loaded by ``python -m runtime --warm`` (everything an agent loads, one HTTP exchange
# included), then listed: the modules an agent's process must not carry.
_LOADED = """
import runpy, sys
sys.argv = ["runtime", "--warm"]
try:
    runpy.run_module("runtime", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert not exc.code, exc.code
print(" ".join(sorted(name for name, mod in sys.modules.items() if mod is not None)))
"""


def test_the_runtime_does_not_load_what_it_never_uses():
    import subprocess

    done = subprocess.run(
        [sys.executable, "-I", "-c", _LOADED], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "runtime.http" in loaded  # the HTTP exchange happened
    # httpx and its stack are for https:// targets only; every platform peer is http://.
    for unused in ("httpx", "httpcore", "anyio", "certifi", "h2", "jinja2", "click"):
        assert unused not in loaded, unused
