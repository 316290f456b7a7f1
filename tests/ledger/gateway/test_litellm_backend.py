"""Provider translation through the LiteLLM SDK, against the local fake provider."""

from __future__ import annotations

import httpx
import pytest

from ledger.gateway.server import GatewayServer
from ledger.models import ProviderProfile, Spend, VirtualKey
from ledger.services.credentials import add_credential
from tests.ledger.conftest import UPSTREAM_SECRET, mint, settled
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120), pytest.mark.slow]


def test_litellm_transport_meters_streams_and_maps_errors(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    ProviderProfile.objects.create(
        name="via-litellm",
        transport="litellm",
        litellm_provider="openai",
        api_key_ref="via-main",
        categories={"medium": {"model": "ok"}},
    )
    add_credential(
        handle="via-main", provider="openai", api_key=UPSTREAM_SECRET, api_base=upstream.base
    )
    prices = {"input_cost_per_token": "1e-6", "output_cost_per_token": "2e-6"}
    secret = mint("r-llm", "a", "1", provider="via-litellm", model="ok", **prices)
    headers = {"Authorization": f"Bearer {secret}"}
    body = {"model": "x", "messages": [{"role": "user", "content": "hi"}]}
    url = f"{gateway.url}/chat/completions"

    plain = httpx.post(url, json=body, headers=headers, timeout=60)
    assert plain.status_code == 200, plain.text
    assert plain.json()["choices"][0]["message"]["content"] == "fake reply"
    streamed = httpx.post(url, json={**body, "stream": True}, headers=headers, timeout=60)
    assert streamed.status_code == 200
    assert "fake " in streamed.text and streamed.text.rstrip().endswith("data: [DONE]")
    assert upstream.auth_headers[-1] == f"Bearer {UPSTREAM_SECRET}"

    settled("r-llm")
    spends = list(Spend.objects.filter(realm_id="r-llm").order_by("id"))
    assert [(s.tokens_in, s.tokens_out, s.outcome) for s in spends] == [(11, 7, "ok")] * 2
    assert VirtualKey.objects.get(realm_id="r-llm").spent_nusd == 2 * (11 * 1000 + 7 * 2000)

    limited = mint("r-llm", "b", "1", provider="via-litellm", model="rate-limited", **prices)
    resp = httpx.post(url, json=body, headers={"Authorization": f"Bearer {limited}"}, timeout=60)
    assert resp.status_code == 429
    assert resp.json()["error"]["retryable"] is True
    assert UPSTREAM_SECRET not in resp.text
