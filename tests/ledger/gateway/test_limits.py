"""Hostile requests: every field that reaches a provider is reserved for or refused, numbers
are bounded, bodies are size-limited, and one bad call never fails another caller's."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.test import override_settings

from ledger.gateway.server import GatewayServer
from ledger.models import Spend, VirtualKey
from tests.conftest import REPO
from tests.fixtures.rawhttp import STILL_OPEN, raw_exchange
from tests.ledger.conftest import mint, settled
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

MSG = [{"role": "user", "content": "hello"}]


def _post(server: GatewayServer, secret: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{server.url}/chat/completions",
        json={"model": "whatever", "messages": MSG, **body},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )


def _untouched(realm: str) -> None:
    key = VirtualKey.objects.get(realm_id=realm)
    assert key.reserved_nusd == 0 and key.spent_nusd == 0 and key.calls == 0
    assert not Spend.objects.filter(realm_id=realm).exists()


def test_n_is_reserved_for_every_completion(gateway: GatewayServer, upstream: FakeUpstream) -> None:
    # 4096 default output tokens x 2e-6 = 0.008 USD per completion.
    secret = mint("r-n", "a", "0.05", provider="fake", model="ok")
    resp = _post(gateway, secret, {"n": 128})
    assert resp.status_code == 402, resp.text
    assert resp.json()["error"]["code"] == "budget_exceeded"
    assert upstream.requests == []
    _untouched("r-n")
    # What fits is forwarded as asked, and billed for every completion.
    resp = _post(gateway, secret, {"n": 3})
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["choices"]) == 3 and upstream.requests[-1]["n"] == 3
    settled("r-n")
    assert Spend.objects.get(realm_id="r-n").tokens_out == 21


def test_only_one_max_tokens_bound_and_it_is_what_is_reserved(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-two", "a", "0.05", provider="fake", model="ok")
    resp = _post(gateway, secret, {"max_completion_tokens": 10, "max_tokens": 100_000})
    assert resp.status_code == 400, resp.text
    assert "max_tokens" in resp.json()["error"]["message"]
    assert upstream.requests == []
    _untouched("r-two")
    assert (
        _post(gateway, secret, {"max_completion_tokens": 10, "max_tokens": 10}).status_code == 200
    )
    sent = upstream.requests[-1]
    assert sent["max_completion_tokens"] == 10 and "max_tokens" not in sent


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("best_of", 64),
        ("prediction", {"type": "content", "content": "x" * 10}),
        ("modalities", ["text", "audio"]),
        ("audio", {"voice": "alloy", "format": "wav"}),
        ("web_search_options", {}),
        ("service_tier", "priority"),
        ("tools", [{"type": "web_search_preview"}]),
        ("stream_options", ["include_usage"]),
        ("stream", "yes"),
        ("top_logprobs", 10**6),
        ("n", 0),
        ("n", 10**30),
        ("use_beam_search", True),
        ("plugins", [{"id": "web"}]),
        ("models", ["openai/gpt-5.4-pro"]),
        ("max_tokens", True),
        ("max_tokens", 10**18),
        ("max_tokens", 40_000),  # past the model's context
        (
            "messages",
            [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
        ),
        ("messages", [{"role": "user", "content": [{"type": "file", "file": {"file_id": "f"}}]}]),
        ("messages", [{"role": "assistant", "audio": {"id": "audio_abc"}}]),
    ],
)
def test_fields_that_could_cost_more_than_reserved_are_refused(
    gateway: GatewayServer, upstream: FakeUpstream, field: str, value: object
) -> None:
    secret = mint("r-field", "a", "1", provider="fake", model="ok", context_length=32_768)
    resp = _post(gateway, secret, {field: value})
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["retryable"] is False and err["message"].startswith(field), err
    assert upstream.requests == []
    _untouched("r-field")


def test_what_is_forwarded_is_what_the_allow_list_passes(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-allow", "a", "1", provider="fake", model="ok")
    body = {
        "temperature": 0.2,
        "top_p": 0.9,
        "stop": ["\n\n"],
        "seed": 7,
        "logprobs": True,
        "top_logprobs": 3,
        "logit_bias": {"50256": -100},
        "user": "agent-a",
        "parallel_tool_calls": False,
        "reasoning_effort": "low",
        "service_tier": "auto",
        "modalities": ["text"],
        "max_tokens": 64,
    }
    assert _post(gateway, secret, body).status_code == 200
    sent = upstream.requests[-1]
    assert {k: sent[k] for k in body} == body
    assert set(sent) == {*body, "model", "messages"}


def test_images_are_reserved_for(gateway: GatewayServer, upstream: FakeUpstream) -> None:
    # A short URL can stand for tens of thousands of prompt tokens: each image is reserved
    # at a generous bound, so a cap that covers the text alone does not cover the image.
    secret = mint("r-img", "a", "0.02", provider="fake", model="ok")
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    content = [{"type": "text", "text": "what is this?"}, image]
    resp = _post(
        gateway, secret, {"messages": [{"role": "user", "content": content}], "max_tokens": 10}
    )
    assert resp.status_code == 402, resp.text
    assert _post(gateway, secret, {"max_tokens": 10}).status_code == 200


async def _neighbours(server: GatewayServer, bad: str, good: str) -> list[tuple[str, int]]:
    async with httpx.AsyncClient(timeout=30) as client:

        async def call(secret: str, body: dict[str, Any]) -> tuple[str, int]:
            resp = await client.post(
                f"{server.url}/chat/completions",
                json={"messages": MSG, **body},
                headers={"Authorization": f"Bearer {secret}"},
            )
            return secret, resp.status_code

        tasks = []
        for _ in range(30):
            tasks.append(call(bad, {"max_tokens": 10**18}))
            tasks.append(call(good, {"max_tokens": 5}))
        return list(await asyncio.gather(*tasks))


def test_an_absurd_call_is_a_400_and_never_fails_a_neighbours_call(
    gateway: GatewayServer,
) -> None:
    bad = mint("r-abs", "a", "1", script="loop: true\nsteps:\n  - text: hi\n")
    good = mint("r-near", "b", "1", script="loop: true\nsteps:\n  - text: hi\n")
    results = asyncio.run(_neighbours(gateway, bad, good))
    # The neighbour's calls all went through; the absurd ones were refused as bad input.
    assert Counter(status for secret, status in results if secret == good) == {200: 30}
    assert Counter(status for secret, status in results if secret == bad) == {400: 30}
    settled("r-abs")
    assert VirtualKey.objects.get(realm_id="r-abs").calls == 0


def test_deeply_nested_json_is_a_400(gateway: GatewayServer) -> None:
    secret = mint("r-deep", "a", "1", script="steps: []")
    resp = httpx.post(
        f"{gateway.url}/chat/completions",
        content=b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 400, resp.text
    _untouched("r-deep")


def test_wild_usage_from_upstream_is_not_taken(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-wild", "a", "1", provider="fake", model="wild-usage")
    assert _post(gateway, secret, {"max_tokens": 20}).status_code == 200
    settled("r-wild")
    spend = Spend.objects.get(realm_id="r-wild")
    assert spend.tokens_in > 0 and 0 < spend.tokens_out <= 20 and spend.cost_nusd > 0


# --- request size -------------------------------------------------------------------------

LIMIT = 64 * 1024


@pytest.fixture
def small_gateway(tmp_path: Path, profiles: None) -> Any:
    with override_settings(BEARPIT_GATEWAY_MAX_BODY_BYTES=LIMIT):
        server = GatewayServer(uds_path=tmp_path / "run" / "g.sock", port=0, upstream_timeout=1.5)
        server.start()
    yield server
    server.stop()


def _raw_exchange(server: GatewayServer, head: bytes, body_chunks: list[bytes]) -> bytes:
    assert server.port is not None
    return raw_exchange(server.port, head, body_chunks)


def test_a_declared_oversized_body_is_refused_unread(small_gateway: GatewayServer) -> None:
    secret = mint("r-big", "a", "1", script="steps: []")
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        + f"authorization: Bearer {secret}\r\n".encode()
        + b"content-length: 734003200\r\n\r\n"
    )
    # Not one byte of the 700 MB is sent: the answer must come from the headers alone.
    answer = _raw_exchange(small_gateway, head, [])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # ... and the connection is closed, so the gateway need not read and drop the rest.
    assert not answer.endswith(STILL_OPEN)
    _untouched("r-big")


def test_an_undeclared_oversized_body_is_cut_off(small_gateway: GatewayServer) -> None:
    secret = mint("r-chunked", "a", "1", script="steps: []")
    head = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        + f"authorization: Bearer {secret}\r\n".encode()
        + b"transfer-encoding: chunked\r\n\r\n"
    )
    piece = b"x" * 16384
    chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    answer = _raw_exchange(small_gateway, head, [chunk] * 64 + [b"0\r\n\r\n"])
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    resp = httpx.post(
        f"{small_gateway.url}/chat/completions",
        json={"messages": [{"role": "user", "content": "y" * (LIMIT + 1)}]},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 413
    assert resp.json()["error"]["code"] == "request_too_large"
    _untouched("r-chunked")
    # Under the limit all is as usual.
    resp = httpx.post(
        f"{small_gateway.url}/chat/completions",
        json={"messages": [{"role": "user", "content": "y" * (LIMIT // 2)}], "max_tokens": 5},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 200, resp.text


def test_the_body_limit_is_a_typed_setting() -> None:
    from django.conf import settings

    assert 1024 * 1024 <= settings.BEARPIT_GATEWAY_MAX_BODY_BYTES <= 256 * 1024 * 1024
    bad = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env={
            **__import__("os").environ,
            "DJANGO_SETTINGS_MODULE": "bearpit.settings",
            "BEARPIT_GATEWAY_MAX_BODY_BYTES": "lots",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0
    assert "BEARPIT_GATEWAY_MAX_BODY_BYTES: expected a whole number" in bad.stderr
