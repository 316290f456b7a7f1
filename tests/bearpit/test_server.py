from __future__ import annotations

import socket

import httpx
import pytest

from bearpit.server import PlatformServer
from tests.fixtures.rawhttp import json_answered, raw_exchange

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


@pytest.mark.django_db(transaction=True)
def test_over_the_real_server_a_50_mb_body_and_a_deep_one_get_json_errors(settings):
    settings.BEARPIT_API_TOKEN = "test-operator-token-server-0123"
    auth = {"Authorization": "Bearer test-operator-token-server-0123"}
    with PlatformServer() as server, httpx.Client(base_url=server.url, timeout=60) as http:
        big = b'{"package": "' + b"x" * (50 * 1024 * 1024) + b'"}'
        response = http.post(
            "/api/realms", content=big, headers={**auth, "Content-Type": "application/json"}
        )
        assert response.status_code == 413
        assert "larger than" in response.json()["error"]
        deep = b"[" * 100_000 + b"]" * 100_000
        response = http.post(
            "/api/realms", content=deep, headers={**auth, "Content-Type": "application/json"}
        )
        assert response.status_code == 400
        assert "nested deeper than" in response.json()["detail"]
        missing = http.get("/api/nowhere", headers=auth)
        assert missing.status_code == 404 and "/api/nowhere" in missing.json()["error"]


@pytest.mark.django_db(transaction=True)
def test_an_oversized_body_is_refused_before_it_is_read(settings):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    with PlatformServer() as server:
        # Only the headers are sent: the answer must come without waiting for 50 MB.
        head = (
            b"POST /api/realms HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: 52428800\r\n\r\n"
        )
        answer = raw_exchange(server.port, head, [], timeout=10, done=json_answered)
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert f"larger than {limit} bytes".encode() in answer

        chunk = b"x" * 1024 * 1024
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        head = (
            b"POST /api/realms HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        count = limit // len(chunk) + 2
        answer = raw_exchange(
            server.port, head, [framed] * count + [b"0\r\n\r\n"], timeout=10, done=json_answered
        )
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
