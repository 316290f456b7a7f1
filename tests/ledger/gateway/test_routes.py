"""The gateway's route table: what is not a route gets a plain JSON 404 or 405."""

from __future__ import annotations

import httpx
import pytest

from ledger.gateway.server import GatewayServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _base(server: GatewayServer) -> str:
    return server.url.removesuffix("/v1")


def test_an_unknown_path_is_a_json_404(gateway: GatewayServer) -> None:
    resp = httpx.get(f"{_base(gateway)}/v1/completions/../admin", timeout=10)
    assert resp.status_code == 404
    assert resp.headers["content-type"] == "application/json"
    assert "no route" in resp.json()["error"]["message"]


def test_a_wrong_method_is_a_405_that_names_the_allowed_one(gateway: GatewayServer) -> None:
    resp = httpx.get(f"{gateway.url}/chat/completions", timeout=10)
    assert resp.status_code == 405
    assert resp.headers["allow"] == "POST"
    assert "GET is not allowed" in resp.json()["error"]["message"]


def test_health_answers_get_and_head(gateway: GatewayServer) -> None:
    assert httpx.get(f"{_base(gateway)}/health", timeout=10).json() == {"status": "ok"}
    head = httpx.head(f"{_base(gateway)}/health", timeout=10)
    assert head.status_code == 200
    assert head.content == b""
