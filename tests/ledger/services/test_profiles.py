"""Provider profiles: seed tables, tier resolution and policy floors, plugins, the active one."""

from __future__ import annotations

import sys
from decimal import Decimal
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from django.test import Client, override_settings

from bearpit.auth import api_token
from ledger.models import VirtualKey
from ledger.services.keys import MintError
from ledger.services.profiles import (
    ProfileError,
    active_profile,
    floor_silence_timeout,
    get_profile,
    load_plugin_profiles,
    resolve_agent_model,
    set_active_profile,
)
from tests.ledger.conftest import mint

pytestmark = pytest.mark.django_db


def test_seed_has_the_reference_four_plus_local_and_offline(profiles: None) -> None:
    azure = get_profile("azure")
    assert azure.categories["large"].model == "gpt-5.4-pro"
    assert azure.categories["small"].input_cost_per_token == Decimal("7.5e-07")
    assert get_profile("anthropic").categories["large"].effort == "high"
    assert get_profile("openrouter").categories["large"].model == "openai/gpt-5.4"
    assert get_profile("local").api_key_ref == ""
    offline = get_profile("offline")
    assert offline.transport == "scripted"
    assert all(
        t.input_cost_per_token and t.output_cost_per_token for t in offline.categories.values()
    )
    assert active_profile().name == "azure"


def test_tiers_resolve_with_fallbacks(profiles: None) -> None:
    anthropic = get_profile("anthropic")
    small = resolve_agent_model({"model_category": "small"}, anthropic)
    assert (small.provider, small.model, small.effort) == ("anthropic", "claude-haiku-4-5", "low")
    assert small.credential_handle == "anthropic-main" and small.transport == "litellm"
    assert resolve_agent_model({}, anthropic).model == "claude-sonnet-5"

    from dataclasses import replace

    only_large = replace(anthropic, categories={"large": anthropic.categories["large"]})
    assert resolve_agent_model({"model_category": "small"}, only_large).model == "claude-opus-5"
    no_medium = replace(
        anthropic,
        categories={"small": anthropic.categories["small"], "large": anthropic.categories["large"]},
    )
    assert resolve_agent_model({"model_category": "medium"}, no_medium).model == "claude-haiku-4-5"
    with pytest.raises(ProfileError, match="no model tiers"):
        resolve_agent_model({}, replace(anthropic, categories={}))


def test_explicit_model_wins_and_caps_take_the_tighter(profiles: None) -> None:
    agent = {
        "model_category": "large",
        "model": {
            "provider": "openrouter",
            "model": "meta/llama",
            "api_key_ref": "my-router",
            "input_cost_per_token": 1e-6,
            "output_cost_per_token": 3e-6,
            "effort": "max",
        },
        "budget": {"max_usd": 2.0, "max_tokens": 100_000, "on_exhausted": "kill"},
    }
    r = resolve_agent_model(agent, get_profile("azure"))
    assert (r.provider, r.model, r.transport, r.effort) == (
        "openrouter",
        "meta/llama",
        "openai",
        "max",
    )
    assert r.credential_handle == "my-router"
    assert r.cap_usd == Decimal("0.3")  # 100k tokens x 3e-6 < 2 USD
    assert r.on_exhausted == "kill"
    loose = resolve_agent_model(
        {**agent, "budget": {"max_usd": 0.1, "max_tokens": 10**9}}, get_profile("azure")
    )
    assert loose.cap_usd == Decimal("0.1")
    assert resolve_agent_model({"budget": {}}, get_profile("azure")).cap_usd is None


def test_policy_fields_only_ever_raise(profiles: None) -> None:
    local = get_profile("local")
    assert local.flat_rate and local.min_budget_usd == Decimal("1")
    assert resolve_agent_model({"budget": {"max_usd": 0.05}}, local).cap_usd == Decimal("1")
    assert resolve_agent_model({"budget": {"max_usd": 5}}, local).cap_usd == Decimal("5")
    assert resolve_agent_model({}, local).cap_usd is None  # uncapped stays uncapped
    # Not flat-rate: a small cap stays small.
    assert resolve_agent_model(
        {"budget": {"max_usd": 0.05}}, get_profile("openai")
    ).cap_usd == Decimal("0.05")

    from dataclasses import replace

    slow = replace(local, min_turn_seconds=120.0)
    assert floor_silence_timeout(90, slow) == 120.0
    assert floor_silence_timeout(300, slow) == 300
    assert floor_silence_timeout(90, local) == 90
    assert resolve_agent_model({}, slow).min_turn_seconds == 120.0


def test_plugin_profiles_load_from_an_installed_distribution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pkg = tmp_path / "acme_bearpit"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "def providers():\n"
        "    return {'acme': {'label': 'Acme', 'transport': 'openai', 'api_base': 'http://acme/v1',\n"
        "        'api_key_ref': 'acme-main', 'categories': {'medium': {'model': 'acme-1',\n"
        "        'input_cost_per_token': 1e-6, 'output_cost_per_token': 2e-6}}}}\n"
        "BROKEN = {'bad': {'categories': {'huge': {'model': 'x'}}}}\n"
    )
    dist = tmp_path / "acme_bearpit-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-bearpit\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[bearpit.providers]\nacme = acme_bearpit:providers\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = load_plugin_profiles()
    assert found["acme"].categories["medium"].model == "acme-1"
    assert found["acme"].source == "plugin"
    r = resolve_agent_model({"model_category": "small"}, found["acme"])
    assert (r.provider, r.model, r.api_base) == ("acme", "acme-1", "http://acme/v1")

    (dist / "entry_points.txt").write_text("[bearpit.providers]\nbad = acme_bearpit:BROKEN\n")
    assert [ep.name for ep in entry_points(group="bearpit.providers")] == ["bad"]
    with pytest.raises(ProfileError, match=r"entry point bad .*profile bad: categories.huge"):
        load_plugin_profiles()
    sys.modules.pop("acme_bearpit", None)


def test_active_provider_is_stored_switchable_and_env_overridable(profiles: None) -> None:
    assert set_active_profile("anthropic").name == "anthropic"
    assert active_profile().name == "anthropic"
    with pytest.raises(ProfileError, match="no such profile"):
        set_active_profile("nope")
    assert active_profile().name == "anthropic"
    with override_settings(BEARPIT_PROVIDER="offline"):
        assert active_profile().name == "offline"


def test_provider_api(profiles: None) -> None:
    client = Client()
    auth = {"Authorization": f"Bearer {api_token()}"}
    assert client.get("/api/settings/provider").status_code == 401
    got = client.get("/api/settings/provider", headers=auth).json()
    assert got["model_provider"] == "azure"
    assert {p["name"] for p in got["providers"]} >= {
        "azure",
        "openai",
        "anthropic",
        "openrouter",
        "local",
        "offline",
    }
    put = client.put(
        "/api/settings/provider",
        {"model_provider": "offline"},
        content_type="application/json",
        headers=auth,
    )
    assert put.status_code == 200 and put.json()["model_provider"] == "offline"
    assert active_profile().name == "offline"
    bad = client.put(
        "/api/settings/provider",
        {"model_provider": "nope"},
        content_type="application/json",
        headers=auth,
    )
    assert bad.status_code == 400 and "no such profile" in bad.json()["model_provider"][0]
    assert active_profile().name == "offline"


def test_mint_takes_prices_from_the_profile_and_refuses_what_it_cannot_cap(profiles: None) -> None:
    mint("r-m", "a", "0.5", provider="anthropic", model="claude-opus-5", credential_handle="")
    key = VirtualKey.objects.get(realm_id="r-m")
    assert key.input_price == Decimal("5e-06") and key.output_price == Decimal("2.5e-05")
    assert key.effort == "high" and key.cap_nusd == 500_000_000 and key.transport == "litellm"
    with pytest.raises(MintError, match="needs token prices"):
        mint("r-m", "b", "1", provider="nowhere", model="unknown-model-xyz")
    with pytest.raises(MintError, match="not in the keystore"):
        mint("r-m", "c", None, provider="openai", model="gpt-5.4")
    with pytest.raises(MintError, match="on_exhausted"):
        mint("r-m", "d", None, on_exhausted="explode")
    # LiteLLM's bundled price table fills in a model no profile names.
    mint("r-m", "e", "1", provider="openai", model="gpt-4o", credential_handle="")
    assert VirtualKey.objects.get(realm_id="r-m", agent_id="e").input_price == Decimal("2.5e-06")
    assert not VirtualKey.objects.filter(agent_id__in=["b", "c", "d"]).exists()
