"""``pit_up`` on a realm whose provider refuses the key: the progress line stops repeating
itself and says why nothing moves (the refusal the agents' traces recorded)."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.e2e.pitrun import pit_env, start_pit, stop_everything, wait_for_line
from tests.realms.management.ranrealm import Home

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


class RefuseEveryKey(BaseHTTPRequestHandler):
    """A provider that answers every request as OpenAI answers a wrong key."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = json.dumps(
            {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def refusing_provider() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), RefuseEveryKey)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


QUIET = re.compile(
    r"^running: (\d+) messages, \d+ events, \$0\.0000 spent — no progress for (\d+)s; "
    r"(ping|pong|umpire)'s last model call failed \(provider 'openai'\): (.+)$"
)


def test_the_progress_line_says_which_call_failed(tmp_path: Path, refusing_provider: str) -> None:
    path = tmp_path / "home"
    # A progress line a second: the quiet spell (three lines) shows after about 3 s.
    home = Home(path, pit_env(path, BEARPIT_PROGRESS_EVERY_S="1"))
    for args, stdin in (
        (("migrate", "-v0"), None),
        (("pit_keys", "add", "openai-main", "--api-base", refusing_provider), "sk-wrong-12345678"),
        (("pit_providers", "use", "openai"), None),
    ):
        done = home.manage(*args, stdin=stdin)
        assert done.returncode == 0, done.stderr
    log = tmp_path / "pit_up.log"
    proc = start_pit(["pit_up", "examples/toolcheck"], home.env, log)
    try:
        text = wait_for_line(log, "no progress for", proc, timeout=120)
        os.kill(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)
        text = log.read_text(encoding="utf-8")
    finally:
        stop_everything(path, proc)
    running = [line for line in text.splitlines() if line.startswith("running: ")]
    quiet = [QUIET.match(line) for line in running if "no progress" in line]
    assert quiet and all(quiet), running
    # The plain line comes first: a quiet spell is three progress lines long.
    assert "no progress" not in running[0], running
    first = quiet[0]
    assert first is not None
    assert int(first.group(2)) >= 3 * 1  # three lines of BEARPIT_PROGRESS_EVERY_S=1
    assert "refused the platform's credential (401)" in first.group(4), first.group(0)
    assert "concluding: manual — interrupted by the operator (Ctrl-C)" in text
