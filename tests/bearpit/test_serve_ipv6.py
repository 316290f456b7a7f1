"""``pit serve --host ::``: the platform listens on every IPv6 and IPv4 address, prints a
URL to the loopback address that ``BEARPIT_ALLOWED_HOSTS`` accepts, and that URL logs a
browser in."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx
import pytest

from bearpit.server import PlatformServer
from realms.management.commands.pit_serve import bind_address, url_host
from tests.e2e.pitrun import free_port, pit_env, start_pit, stop_everything, wait_for_line


@pytest.mark.parametrize(
    ("host", "shown"),
    [
        ("::", "[::1]"),
        ("[::]", "[::1]"),
        ("::1", "[::1]"),
        ("0.0.0.0", "127.0.0.1"),  # noqa: S104 - what an operator may pass
        ("", "127.0.0.1"),
        ("127.0.0.1", "127.0.0.1"),
        ("fd00::2", "[fd00::2]"),
    ],
)
def test_the_printed_host_is_one_to_browse_to(host, shown):
    assert url_host(host) == shown


def test_a_bracketed_address_binds_without_its_brackets():
    assert bind_address("[::1]") == "::1"
    assert bind_address("::") == "::"


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(60)
def test_the_server_on_any_ipv6_address_answers_both_families(settings):
    with PlatformServer(0, host="::") as server:
        for host in ("[::1]", "127.0.0.1", "localhost"):
            response = httpx.get(f"http://{host}:{server.port}/health", timeout=10)
            assert response.status_code == 200, (host, response.text)
            assert response.json() == {"status": "ok"}
        # The allowlist still decides: a name it does not list is refused.
        refused = httpx.get(
            f"http://[::1]:{server.port}/health", headers={"Host": "evil.example"}, timeout=10
        )
        assert refused.status_code == 400
        assert server.url == f"http://[::]:{server.port}"


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_pit_serve_on_ipv6_prints_a_login_url_that_logs_in(tmp_path: Path) -> None:
    home = tmp_path / "home"
    log = tmp_path / "pit_serve.log"
    port = free_port()
    proc = start_pit(["pit_serve", "--host", "::", "--port", str(port)], pit_env(home), log)
    try:
        text = wait_for_line(log, "login: ", proc, timeout=90)
        token = (home / "api-token").read_text().strip()
        assert f"serve: http://[::1]:{port}/" in text
        assert f"login: http://[::1]:{port}/login?token={token}" in text
        assert "not in BEARPIT_ALLOWED_HOSTS" not in text
        with httpx.Client(follow_redirects=True, timeout=30) as browser:
            landed = browser.get(f"http://[::1]:{port}/login?token={token}")
            assert landed.status_code == 200
            assert landed.url == httpx.URL(f"http://[::1]:{port}/admin/")
            api = browser.get(f"http://[::1]:{port}/api/settings")
            assert api.status_code == 200, api.text
            assert token not in api.text
            # A write from the page's own origin, with the session and its CSRF token.
            origin = f"http://[::1]:{port}"
            switched = browser.put(
                f"{origin}/api/settings/provider",
                json={"model_provider": "offline"},
                headers={"X-CSRFToken": browser.cookies["csrftoken"], "Origin": origin},
            )
            assert switched.status_code == 200, switched.text
            assert switched.json()["model_provider"] == "offline"
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=60)
    finally:
        stop_everything(home, proc)
    assert code == 0, log.read_text()
