from __future__ import annotations

import socket
import time

import pytest

from realms.herald.config import HomeserverConfig
from realms.herald.homeserver import (
    HomeserverError,
    ensure_homeserver,
    free_port,
    healthy,
    start_homeserver,
)

pytestmark = pytest.mark.timeout(90)


def test_a_taken_port_fails_fast_and_clearly(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = HomeserverConfig.from_settings(home=tmp_path, port=port)
        started = time.monotonic()
        with pytest.raises(HomeserverError, match=f"port {port} on 127.0.0.1 is already in use"):
            start_homeserver(config)
        assert time.monotonic() - started < 2


def test_a_bad_config_fails_with_the_end_of_the_log(tmp_path):
    config = HomeserverConfig.from_settings(
        home=tmp_path, port=free_port(), server_name="not a valid name!"
    )
    with pytest.raises(HomeserverError, match="exited with status") as failed:
        start_homeserver(config, timeout=60)
    assert "server_name" in str(failed.value) or "not a valid name" in str(failed.value)
    assert not config.pid_path.exists()


def test_ensure_reuses_a_running_homeserver(homeserver):
    handle = ensure_homeserver(homeserver.config)
    assert handle.started is False
    assert handle.pid == homeserver.handle.pid
    assert handle.url == homeserver.url
    assert healthy(homeserver.socket_path)
    assert homeserver.socket_path.stat().st_mode & 0o777 == 0o666


def test_generated_config_keeps_secrets_and_closes_the_server(homeserver):
    import yaml

    config = yaml.safe_load(homeserver.config.config_path.read_text())
    assert config["trusted_key_servers"] == []
    assert config["enable_registration"] is False
    assert config["presence"] == {"enabled": False}
    assert all(
        "federation" not in r["names"] for li in config["listeners"] for r in li["resources"]
    )
    assert config["modules"][0]["module"] == "realms.herald.gate.HeraldGate"
    registration = yaml.safe_load(homeserver.config.registration_path.read_text())
    assert registration["rate_limited"] is False
    assert registration["namespaces"]["users"] == [{"exclusive": True, "regex": "@bp_.*"}]
    assert homeserver.config.registration_path.stat().st_mode & 0o777 == 0o600


def test_an_external_homeserver_is_checked_and_used_over_tcp(homeserver, settings):
    from realms.herald.matrix import matrix_client

    settings.BEARPIT_MATRIX_URL = homeserver.url
    handle = ensure_homeserver()
    assert (handle.started, handle.url) == (False, homeserver.url)
    with pytest.raises(HomeserverError, match="external"):
        handle.stop()
    with matrix_client() as client:
        whoami = client.request("GET", "/_matrix/client/v3/account/whoami")
    assert whoami["user_id"] == client.system_user_id
    settings.BEARPIT_MATRIX_URL = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(HomeserverError, match="unreachable"):
        ensure_homeserver()
