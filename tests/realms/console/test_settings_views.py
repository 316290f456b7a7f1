"""The settings page through Django's test client: what it shows (profiles and tiers,
keys by handle, readiness, capacity), and every change through the ledger's services,
with bad input refused beside its field and nothing changed. A key typed in never
comes back: not in the page, not after an error, not in a message."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from ledger.models import Credential, LedgerSetting, ProviderProfile
from ledger.services.credentials import add_credential, credential_secret
from ledger.services.profiles import get_profile, seed_profiles, stored_provider

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

SECRET = "sk-test-CONSOLESECRET-abcdefghijklmnop"
ROTATED = "sk-test-ROTATEDSECRET-qrstuvwxyz012345"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_PROVIDER = None
    settings.BEARPIT_DOCKER_URL = f"unix://{tmp_path}/no-engine.sock"
    seed_profiles(overwrite=True)


def tiers_post(name: str, **changes: str) -> dict[str, str]:
    """The tier form of ``name`` as the page fills it, with ``changes`` typed over it."""
    prefix = f"tiers-{name}"
    data = {}
    for tier, spec in get_profile(name).categories.items():
        per_m = {
            "input": spec.input_cost_per_token,
            "output": spec.output_cost_per_token,
        }
        data[f"{prefix}-{tier}-model"] = spec.model
        data[f"{prefix}-{tier}-effort"] = spec.effort or ""
        for side, price in per_m.items():
            data[f"{prefix}-{tier}-{side}"] = "" if price is None else str(price * 1_000_000)
        data[f"{prefix}-{tier}-context"] = str(spec.context_length or "")
    data.update({f"{prefix}-{k.replace('_', '-')}": v for k, v in changes.items()})
    return data


def profile_rows() -> list[tuple[str, object]]:
    return list(ProviderProfile.objects.order_by("name").values_list("name", "categories"))


def test_a_browser_without_the_operator_session_sees_no_page(client):
    assert client.get("/settings/").status_code == 403
    before = profile_rows()
    assert client.post("/settings/provider", {"model_provider": "offline"}).status_code == 403
    assert client.post("/settings/tiers/azure", tiers_post("azure")).status_code == 403
    add = {"add-key-handle": "x", "add-key-provider": "azure", "add-key-api_key": SECRET}
    assert client.post("/settings/keys", add).status_code == 403
    assert profile_rows() == before and not Credential.objects.exists()
    assert not LedgerSetting.objects.exists()


def test_the_page_shows_profiles_tiers_readiness_and_capacity(operator):
    page = operator.get("/settings/").content.decode()
    assert "Launches resolve each agent's tier against <strong>azure</strong>" in page
    for name in ("azure", "openai", "offline"):
        assert f'action="/settings/tiers/{name}"' in page
    # Prices are shown per million tokens: the seeded 7.5e-07 per token is $0.75.
    assert get_profile("azure").categories["small"].input_cost_per_token == Decimal("7.5E-7")
    assert 'name="tiers-azure-small-input" value="0.75"' in page
    assert "<code>run_code</code>" in page and "not ready" in page
    assert "<strong>0</strong> of 6 realms active" in page


def test_switching_the_provider_is_stored(operator):
    response = operator.post("/settings/provider", {"model_provider": "offline"})
    assert response.status_code == 302
    assert stored_provider() == "offline"
    page = operator.get("/settings/").content.decode()
    assert "Launches now resolve against offline." in page


def test_an_unknown_provider_is_refused_beside_the_field(operator):
    response = operator.post("/settings/provider", {"model_provider": "nobody"})
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert stored_provider() == "azure"


def test_a_tier_edit_is_saved_through_the_ledger(operator):
    response = operator.post(
        "/settings/tiers/azure", tiers_post("azure", small_input="2.5", small_model="gpt-x")
    )
    assert response.status_code == 302, response.content.decode()
    small = get_profile("azure").categories["small"]
    assert small.model == "gpt-x"
    assert small.input_cost_per_token == Decimal("0.0000025")
    page = operator.get("/settings/").content.decode()
    assert 'name="tiers-azure-small-input" value="2.5"' in page
    assert "The tiers of azure are saved." in page


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("small_input", "cheap", "is not a number of dollars"),
        ("small_input", "-1", "greater than or equal to 0"),
        ("medium_output", "2000000", "less than or equal to 1"),
        ("large_context", "12k", "is not a whole number of tokens"),
        ("small_model", "", "This field is required"),
        ("small_input", "0", "a price of 0 is only for flat-rate providers"),
    ],
)
def test_a_bad_tier_value_is_refused_beside_its_field(operator, field, value, words):
    before = profile_rows()
    response = operator.post("/settings/tiers/azure", tiers_post("azure", **{field: value}))
    assert response.status_code == 400
    page = response.content.decode()
    # The error sits in the same cell as the input it is about.
    name = f"tiers-azure-{field.replace('_', '-')}"
    cell = page.split(f'name="{name}"', 1)[1].split("</td>", 1)[0]
    assert words in cell, cell
    assert profile_rows() == before


def test_tiers_of_an_unknown_profile_are_a_404(operator):
    before = profile_rows()
    assert operator.post("/settings/tiers/nobody", {}).status_code == 404
    assert profile_rows() == before


def test_a_key_is_added_and_never_shown_again(operator):
    add = {
        "add-key-handle": "azure-main",
        "add-key-provider": "azure",
        "add-key-api_key": SECRET,
        "add-key-api_base": "https://example.openai.azure.com",
    }
    response = operator.post("/settings/keys", add, follow=True)
    assert response.redirect_chain[-1] == ("/settings/", 302)
    page = response.content.decode()
    assert SECRET not in page and SECRET[-4:] not in page
    assert "<code>azure-main</code>" in page and "Key azure-main for azure is stored." in page
    assert credential_secret("azure-main")[0] == SECRET


def test_a_refused_key_changes_nothing_and_is_not_shown_back(operator):
    add_credential(handle="azure-main", provider="azure", api_key=SECRET)
    taken = {"add-key-handle": "azure-main", "add-key-provider": "azure"}
    response = operator.post("/settings/keys", {**taken, "add-key-api_key": ROTATED})
    assert response.status_code == 400
    page = response.content.decode()
    assert ROTATED not in page
    cell = page.split('name="add-key-handle"', 1)[1].split("</div>", 1)[0]
    assert "already exists" in cell
    bad = {"add-key-handle": "bad handle!", "add-key-provider": "azure", "add-key-api_key": ROTATED}
    response = operator.post("/settings/keys", bad)
    assert response.status_code == 400 and ROTATED not in response.content.decode()
    assert "use 1-120 letters" in response.content.decode()
    assert credential_secret("azure-main")[0] == SECRET and Credential.objects.count() == 1


def test_a_key_is_rotated_and_removed(operator):
    add_credential(handle="azure-main", provider="azure", api_key=SECRET)
    response = operator.post(
        "/settings/keys/azure-main/rotate", {"rotate-azure-main-api_key": ROTATED}
    )
    assert response.status_code == 302
    assert credential_secret("azure-main")[0] == ROTATED
    empty = operator.post("/settings/keys/azure-main/rotate", {"rotate-azure-main-api_key": ""})
    assert empty.status_code == 400 and "This field is required" in empty.content.decode()
    assert credential_secret("azure-main")[0] == ROTATED
    missing = operator.post("/settings/keys/nobody/rotate", {"rotate-nobody-api_key": SECRET})
    assert missing.status_code == 404 and SECRET not in missing.content.decode()
    asked = operator.post("/settings/keys/azure-main/remove")
    assert asked.status_code == 200 and "Remove the key azure-main?" in asked.content.decode()
    assert "azure will have no key" in asked.content.decode()
    assert Credential.objects.count() == 1
    removed = operator.post("/settings/keys/azure-main/remove", {"confirm": "yes"})
    assert removed.status_code == 302
    assert not Credential.objects.exists()
    assert operator.post("/settings/keys/azure-main/remove").status_code == 404
    gone = operator.post("/settings/keys/azure-main/remove", {"confirm": "yes"})
    assert gone.status_code == 404


def test_writes_need_a_post_with_the_csrf_token(operator):
    assert operator.get("/settings/provider").status_code == 405
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(username="operator"))
    assert strict.post("/settings/provider", {"model_provider": "offline"}).status_code == 403
    assert stored_provider() == "azure"
