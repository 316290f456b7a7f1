"""``pit_serve`` as a user runs it: a subprocess on a fresh home, opened with a real HTTP
client the way a browser opens the URL it prints, then stopped with Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.pitrun import (
    REPO,
    free_port,
    leftover_pids,
    pit_env,
    read_chronicle,
    start_pit,
    stop_everything,
    wait_for_line,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def login_url(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("login: ")]
    assert len(lines) == 1, text
    return lines[0].removeprefix("login: ").strip()


def session_cookie_header(response: httpx.Response) -> str:
    """The Set-Cookie header of the session, from the redirect that set it."""
    for hop in (*response.history, response):
        for header in hop.headers.get_list("set-cookie"):
            if header.startswith("sessionid="):
                return header
    raise AssertionError("no session cookie was set")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_the_printed_url_logs_in_and_a_signal_stops_cleanly(
    tmp_path: Path, signum: signal.Signals
) -> None:
    home = tmp_path / "home"
    log = tmp_path / "pit_serve.log"
    port = free_port()
    proc = start_pit(["pit_serve", "--port", str(port)], pit_env(home), log)
    try:
        text = wait_for_line(log, "login: ", proc, timeout=90)
        url = login_url(text)
        token = (home / "api-token").read_text().strip()
        assert url == f"http://127.0.0.1:{port}/login?token={token}"
        with httpx.Client(follow_redirects=True, timeout=30) as browser:
            landed = browser.get(url)
            assert landed.status_code == 200
            assert landed.url == httpx.URL(f"http://127.0.0.1:{port}/")  # the console
            assert token not in str(landed.url)
            assert all(token not in str(hop.url) for hop in landed.history[1:])
            cookie = session_cookie_header(landed).lower()
            assert "httponly" in cookie and "samesite=strict" in cookie
            # The browser holds the session, never the token.
            assert all(token not in value for value in browser.cookies.values())
            admin = browser.get(f"http://127.0.0.1:{port}/admin/")
            assert admin.status_code == 200
            assert "Site administration" in admin.text
            api = browser.get(f"http://127.0.0.1:{port}/api/realms")
            assert api.status_code == 200
            assert api.json()["realms"] == []
            assert httpx.get(f"http://127.0.0.1:{port}/api/realms").status_code == 401
        assert token not in log.read_text().replace(url, "")
        proc.send_signal(signum)
        code = proc.wait(timeout=60)
        left = leftover_pids(home)
    finally:
        stop_everything(home, proc)
    assert code == 0, log.read_text()
    assert left == [], log.read_text()
    assert log.read_text().rstrip().endswith("stopped")


def test_print_url_prints_the_login_url_and_starts_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "manage.py", "pit_serve", "--print-url", "--port", "8123"],
        cwd=REPO,
        env=pit_env(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    token = (home / "api-token").read_text().strip()
    assert done.stdout.strip() == f"http://127.0.0.1:8123/login?token={token}"
    assert not (home / "bearpit.sqlite3").exists()


def test_a_taken_port_is_one_line_naming_the_fix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "manage.py", "pit_serve", "--port", str(port)],
            cwd=REPO,
            env=pit_env(home),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port}" in lines[0] and "--port" in lines[0]
    assert "Traceback" not in done.stderr
    assert not (home / "bearpit.sqlite3").exists()


def test_a_realm_left_running_is_recovered_and_ticked_to_its_end(tmp_path: Path) -> None:
    """pit_up killed mid-realm leaves it running; pit_serve does a worker's part: it
    resumes the realm and ticks it to its verdict in the background."""
    home = tmp_path / "home"
    env = pit_env(home)
    up_log, serve_log = tmp_path / "pit_up.log", tmp_path / "pit_serve.log"
    up = start_pit(["pit_up", "examples/toolcheck"], env, up_log)
    serve = None
    try:
        text = wait_for_line(up_log, "provision: 3 agents started", up, timeout=90)
        match = re.search(r"provision: realm (\S+)", text)
        assert match is not None
        realm_id = match.group(1)
        os.kill(up.pid, signal.SIGKILL)
        up.wait(timeout=10)
        assert read_chronicle(home, realm_id).realms[0]["state"] == "running"
        port = free_port()
        serve = start_pit(["pit_serve", "--port", str(port)], env, serve_log)
        wait_for_line(serve_log, f"recover: {realm_id} resumed", serve, timeout=90)
        # Recovery comes before serving; the token exists once the login URL is printed.
        wait_for_line(serve_log, "login: ", serve, timeout=60)
        token = (home / "api-token").read_text().strip()
        bearer = {"Authorization": f"Bearer {token}"}
        deadline = time.monotonic() + 120
        state = "running"
        while state not in ("archived", "failed", "interrupted"):
            assert time.monotonic() < deadline, serve_log.read_text()
            time.sleep(1.0)
            status = httpx.get(f"http://127.0.0.1:{port}/api/realms/{realm_id}", headers=bearer)
            state = status.json()["state"]
        wait_for_line(serve_log, f"archived: {realm_id}", serve, timeout=30)
        serve.send_signal(signal.SIGINT)
        code = serve.wait(timeout=60)
        # The homeserver the killed pit_up started is not pit_serve's to stop; the
        # realm's sandboxes are, at its teardown.
        left = leftover_pids(home / "realms" / realm_id)
    finally:
        stop_everything(home, up, serve)
    assert state == "archived", serve_log.read_text()
    assert code == 0, serve_log.read_text()
    assert left == [], serve_log.read_text()
    assert "realmtools.audit" not in serve_log.read_text()
    chron = read_chronicle(home, realm_id)
    assert chron.lifecycle() == ["provisioning", "running", "concluding", "archived"]
    assert len(chron.kinds("verdict")) == 1
