"""``/api/settings…``: one page with providers, keys by handle, capacity and tool
readiness; switching the provider and editing tiers refuse bad input, located, and
change nothing."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from ledger.models import LedgerSetting, ProviderProfile
from ledger.services.credentials import add_credential
from ledger.services.profiles import active_profile, get_profile
from realms.models import Realm
from realms.realmtools.server import RealmtoolsServer, default_socket_path

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-settings-0123456789"
AUTH = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
SECRET = "sk-test-SETTINGSSECRET-abcdefghijklmnop"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path, profiles):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN
    settings.BEARPIT_PROVIDER = None
    settings.BEARPIT_DOCKER_URL = f"unix://{tmp_path}/no-engine.sock"


def get_settings(client):
    response = client.get("/api/settings", **AUTH)
    assert response.status_code == 200, response.content
    return response.json()


def put(client, path: str, body: object):
    return client.put(path, body, content_type="application/json", **AUTH)


def categories_of(name: str):
    return ProviderProfile.objects.get(name=name).categories


def test_the_page_lists_every_profile_with_its_tiers(client):
    page = get_settings(client)
    assert page["model_provider"] == "azure" and page["stored"] == "azure"
    assert page["overridden_by_env"] is False
    by_name = {p["name"]: p for p in page["providers"]}
    assert {"azure", "anthropic", "offline", "local"} <= set(by_name)
    small = by_name["anthropic"]["categories"]["small"]
    assert small["model"] == "claude-haiku-4-5"
    assert small["effort"] == "low"
    assert small["input_cost_per_token"] == pytest.approx(1e-6)
    assert small["output_cost_per_token"] == pytest.approx(5e-6)
    assert small["context_length"] == 200_000
    assert by_name["azure"]["api_key_ref"] == "azure-main"
    assert by_name["azure"]["editable"] is True


def test_keys_are_listed_by_handle_and_never_show_the_key(client):
    add_credential(
        handle="azure-main", provider="azure", api_key=SECRET, api_base="https://r.example/"
    )
    add_credential(handle="ollama", provider="local", api_key=None)
    response = client.get("/api/settings", **AUTH)
    body = response.content.decode()
    keys = {k["handle"]: k for k in response.json()["keys"]}
    assert keys["azure-main"] == {
        "handle": "azure-main",
        "provider": "azure",
        "api_base": "https://r.example/",
        "used_by": ["azure"],
    }
    assert keys["ollama"]["provider"] == "local"
    # Not the key, nor its first or last characters.
    for part in (SECRET, SECRET[:8], SECRET[-4:]):
        assert part not in body


def test_capacity_counts_the_realms_not_yet_ended(client, settings):
    settings.BEARPIT_MAX_ACTIVE_REALMS = 3
    for realm_id, state in (("r-live", "running"), ("r-new", "pending"), ("r-done", "archived")):
        Realm.objects.create(realm_id=realm_id, package_name="p", state=state)
    assert get_settings(client)["capacity"] == {"max_active": 3, "active": 2}


def test_tools_are_not_ready_without_the_realmtools_server(client, settings):
    settings.BEARPIT_SANDBOX = "process"
    tools = {t["name"]: t for t in get_settings(client)["tools"]}
    assert {"run_code", "submit_sealed", "rule", "web_fetch"} <= set(tools)
    assert tools["web_fetch"]["kind"] == "granted"
    assert tools["rule"]["kind"] == "realmtool"
    for tool in tools.values():
        assert tool["ready"] is False
        assert "realmtools server does not answer" in tool["reason"]


def test_tools_are_ready_with_the_server_and_run_code_needs_the_sandbox(
    client, settings, monkeypatch, tmp_path
):
    # A home with a short path: a Unix socket's path has room for 107 bytes only.
    home = tempfile.TemporaryDirectory(prefix="bp-")
    settings.BEARPIT_HOME = Path(home.name)
    server = RealmtoolsServer(uds_path=default_socket_path())
    server.start()
    try:
        settings.BEARPIT_SANDBOX = "process"
        tools = {t["name"]: t for t in get_settings(client)["tools"]}
        assert all(t["ready"] and t["reason"] is None for t in tools.values()), tools
        # bwrap selected, and not on PATH: run_code alone is not ready, and says why.
        settings.BEARPIT_SANDBOX = "bwrap"
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
        page = get_settings(client)
    finally:
        server.stop()
        home.cleanup()
    tools = {t["name"]: t for t in page["tools"]}
    assert tools["run_code"]["ready"] is False
    assert "bwrap not found" in tools["run_code"]["reason"]
    assert tools["rule"]["ready"] is True and tools["web_fetch"]["ready"] is True


def test_the_sandbox_backends_say_which_is_selected_and_why_one_is_not_ready(
    client, settings, monkeypatch, tmp_path
):
    settings.BEARPIT_SANDBOX = "docker"
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    sandbox = get_settings(client)["sandbox"]
    assert sandbox["backend"] == "docker"
    backends = {b["name"]: b for b in sandbox["backends"]}
    assert list(backends) == ["bwrap", "docker", "process"]
    assert backends["docker"]["selected"] is True and backends["bwrap"]["selected"] is False
    assert backends["bwrap"] == {
        "name": "bwrap",
        "ready": False,
        "reason": "bwrap not found: apt-get install bubblewrap",
        "selected": False,
        "isolates": True,
    }
    assert backends["docker"]["ready"] is False
    assert "docker engine unreachable" in backends["docker"]["reason"]
    assert backends["process"]["ready"] is True and backends["process"]["isolates"] is False


def test_switching_the_provider_is_stored_and_shown(client):
    response = put(client, "/api/settings/provider", {"model_provider": "anthropic"})
    assert response.status_code == 200, response.content
    assert response.json()["model_provider"] == "anthropic"
    assert active_profile().name == "anthropic"
    assert get_settings(client)["model_provider"] == "anthropic"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model_provider": "nope"}, "model_provider"),
        ({}, "model_provider"),
        ({"model_provider": "anthropic", "extra": 1}, "extra"),
        ({"model_provider": 5}, "model_provider"),
        ({"model_provider": 7 * "x" * 20}, "model_provider"),
        (["anthropic"], "non_field_errors"),
    ],
)
def test_a_bad_provider_switch_is_a_located_400_and_changes_nothing(client, body, field):
    response = put(client, "/api/settings/provider", body)
    assert response.status_code == 400
    assert field in response.json()
    assert not LedgerSetting.objects.filter(key="active_provider").exists()
    assert active_profile().name == "azure"


def test_model_config_replaces_the_tiers_named_and_keeps_the_others(client):
    medium_before = categories_of("azure")["medium"]
    tier = {
        "model": "gpt-5.4-mini-2",
        "effort": "high",
        "input_cost_per_token": 1e-6,
        "output_cost_per_token": 4e-6,
        "context_length": 128_000,
    }
    response = put(
        client,
        "/api/settings/model-config",
        {"providers": {"azure": {"categories": {"small": tier}}}},
    )
    assert response.status_code == 200, response.content
    shown = {p["name"]: p for p in response.json()["providers"]}["azure"]
    assert shown["categories"]["small"] == tier
    assert shown["source"] == "user"
    assert categories_of("azure")["medium"] == medium_before
    small = get_profile("azure").categories["small"]
    assert (small.model, small.effort, small.context_length) == ("gpt-5.4-mini-2", "high", 128_000)
    assert small.input_cost_per_token is not None
    assert float(small.input_cost_per_token) == pytest.approx(1e-6)
    # A tier given without its optional fields has them empty (replaced, not merged).
    put(
        client,
        "/api/settings/model-config",
        {"providers": {"azure": {"categories": {"small": {"model": "m"}}}}},
    )
    assert categories_of("azure")["small"] == {
        "model": "m",
        "effort": None,
        "input_cost_per_token": None,
        "output_cost_per_token": None,
        "context_length": None,
    }


def _tier(**over):
    return {"model": "m", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, **over}


@pytest.mark.parametrize(
    ("providers", "where"),
    [
        ({"nope": {"categories": {"small": _tier()}}}, "providers.nope"),
        ({"azure": {"categories": {"huge": _tier()}}}, "huge"),
        ({"azure": {"categories": {}}}, "categories"),
        (
            {"azure": {"categories": {"small": _tier(input_cost_per_token=-1)}}},
            "input_cost_per_token",
        ),
        (
            {"azure": {"categories": {"small": _tier(output_cost_per_token=2)}}},
            "output_cost_per_token",
        ),
        ({"azure": {"categories": {"small": _tier(effort="extreme")}}}, "effort"),
        ({"azure": {"categories": {"small": _tier(context_length=0)}}}, "context_length"),
        (
            {"azure": {"categories": {"small": _tier(input_cost_per_token=True)}}},
            "input_cost_per_token",
        ),
        (
            {"azure": {"categories": {"small": _tier(input_cost_per_token="1e-6")}}},
            "input_cost_per_token",
        ),
        ({"azure": {"categories": {"small": _tier(model=5)}}}, "model"),
        ({"azure": {"categories": {"small": _tier(temperature=1)}}}, "temperature"),
        ({"azure": {"categories": {"small": {"effort": "low"}}}}, "model"),
        ({"azure": {"categories": {"small": _tier(model="")}}}, "model"),
        ({"azure": {"tiers": {}}}, "tiers"),
        ({}, "providers"),
        # A per-token provider at a price of 0 would have no cap: refused now, not at launch.
        (
            {"azure": {"categories": {"small": _tier(input_cost_per_token=0)}}},
            "providers.azure.categories.small.input_cost_per_token",
        ),
        # Every entry is checked before any is saved.
        (
            {
                "azure": {"categories": {"small": _tier()}},
                "anthropic": {"categories": {"large": _tier(output_cost_per_token=0)}},
            },
            "providers.anthropic.categories.large.output_cost_per_token",
        ),
    ],
)
def test_a_bad_model_config_is_a_located_400_and_changes_nothing(client, providers, where):
    before = {p.name: p.categories for p in ProviderProfile.objects.all()}
    response = put(client, "/api/settings/model-config", {"providers": providers})
    assert response.status_code == 400, response.content
    assert where in str(response.json()) or where in response.json(), response.json()
    assert {p.name: p.categories for p in ProviderProfile.objects.all()} == before


def test_a_flat_rate_profile_may_price_a_tier_at_zero(client):
    body = {"providers": {"local": {"categories": {"medium": _tier(input_cost_per_token=0)}}}}
    response = put(client, "/api/settings/model-config", body)
    assert response.status_code == 200, response.content
    assert categories_of("local")["medium"]["input_cost_per_token"] == 0


def test_the_settings_routes_need_the_operator(client):
    assert client.get("/api/settings").status_code == 401
    response = client.put(
        "/api/settings/model-config",
        {"providers": {"azure": {"categories": {"small": _tier()}}}},
        content_type="application/json",
    )
    assert response.status_code == 401
    assert categories_of("azure")["small"]["model"] != "m"
