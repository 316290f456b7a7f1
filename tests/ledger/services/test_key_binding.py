"""A stored provider key goes only to the provider it was stored for, and a paid provider's
prices cannot be zeroed: both are enforced where a virtual key is minted, and again where the
gateway loads the key."""

from __future__ import annotations

from decimal import Decimal

import httpx
import pytest

from ledger.gateway.server import GatewayServer
from ledger.models import Credential, VirtualKey
from ledger.services.keys import MintError, mint_virtual_key
from tests.ledger.conftest import UPSTREAM_SECRET, mint
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _mint(**kw: object) -> tuple[VirtualKey, str]:
    args: dict[str, object] = {
        "realm_id": "r-bind",
        "agent_id": "a",
        "cap_usd": Decimal("0.05"),
        "on_exhausted": "starve",
    }
    args.update(kw)
    return mint_virtual_key(**args)  # type: ignore[arg-type]


def test_a_stored_key_is_never_minted_for_another_provider(upstream: FakeUpstream) -> None:
    # The package names the local profile (whose base URL an agent might reach) with the
    # handle of a paid provider's key.
    with pytest.raises(MintError, match=r"fake-main.*stored for provider 'fake'.*not 'local'"):
        _mint(provider="local", model="qwen3:8b", credential_handle="fake-main")
    with pytest.raises(MintError, match="stored for provider 'fake'"):
        _mint(provider="openai", model="gpt-5.4", credential_handle="fake-main")
    assert not VirtualKey.objects.exists()
    key, _ = _mint(provider="fake", model="ok", credential_handle="fake-main")
    assert key.credential_handle == "fake-main"


def test_the_gateway_will_not_send_a_key_to_another_provider(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-moved", "a", "1", provider="fake", model="ok")
    # The credential is re-labelled afterwards (say in the admin): the key minted for the
    # old provider may no longer use it.
    Credential.objects.filter(handle="fake-main").update(provider="openai")
    resp = httpx.post(
        f"{gateway.url}/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )
    assert resp.status_code == 502, resp.text
    err = resp.json()["error"]
    assert err["code"] == "credential_mismatch" and err["retryable"] is False
    assert upstream.requests == [] and UPSTREAM_SECRET not in resp.text
    assert VirtualKey.objects.get(realm_id="r-moved").reserved_nusd == 0


def test_zero_prices_only_on_flat_rate_profiles(upstream: FakeUpstream) -> None:
    for prices in ((0, 2e-6), (1e-6, 0), (0, 0)):
        with pytest.raises(MintError, match=r"price of 0 .*only for flat-rate"):
            _mint(
                provider="fake",
                model="ok",
                input_cost_per_token=prices[0],
                output_cost_per_token=prices[1],
            )
    with pytest.raises(MintError, match="price of 0"):
        _mint(
            provider="fake",
            model="ok",
            cap_usd=None,
            input_cost_per_token=0,
            output_cost_per_token=0,
        )
    with pytest.raises(MintError, match="must not be negative"):
        _mint(
            provider="fake", model="other", input_cost_per_token=-1e-6, output_cost_per_token=1e-6
        )
    with pytest.raises(MintError, match="at most 1 USD"):
        _mint(provider="fake", model="other", input_cost_per_token=1e-6, output_cost_per_token=5)
    assert not VirtualKey.objects.exists()
    # A flat-rate profile may be free.
    local, _ = _mint(
        provider="local", model="qwen3:8b", input_cost_per_token=0, output_cost_per_token=0
    )
    assert local.input_price == 0 and local.output_price == 0


def test_a_package_price_never_undercuts_the_known_price(upstream: FakeUpstream) -> None:
    key, _ = _mint(
        provider="fake", model="ok", input_cost_per_token=1e-15, output_cost_per_token=1e-5
    )
    # The profile's tier prices ok at 1e-6 / 2e-6: the lower one is raised, the higher kept.
    assert key.input_price == Decimal("1e-6") and key.output_price == Decimal("1e-5")
    table, _ = _mint(
        agent_id="b",
        provider="openai",
        model="gpt-4o",
        credential_handle="",
        input_cost_per_token=1e-12,
        output_cost_per_token=1e-12,
    )
    assert table.input_price is not None and table.output_price is not None
    assert table.input_price > Decimal("1e-7") and table.output_price > Decimal("1e-7")
