from __future__ import annotations

import socket

import httpx
import pytest

from bearpit.server import PlatformServer

pytestmark = pytest.mark.timeout(60)


def test_serves_the_asgi_app_until_stopped():
    server = PlatformServer().start()
    try:
        assert server.port > 0
        assert httpx.get(f"{server.url}/health").json() == {"status": "ok"}
    finally:
        server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health", timeout=2)
    # The same port can be served again (a restarted endpoint keeps its address).
    with PlatformServer(server.port) as again:
        assert httpx.get(f"{again.url}/health").status_code == 200


def test_a_taken_port_is_refused_clearly():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"127.0.0.1:{port}"):
            PlatformServer(port).start()
