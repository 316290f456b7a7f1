"""Which provider a launch resolves against: the configured one when it can be called,
the keyless offline profile only with consent."""

from __future__ import annotations

import pytest
from django.test import override_settings

from ledger.services.profiles import seed_profiles, set_active_profile
from realms.services.launch import LaunchError, LaunchOptions, launch_realm
from realms.services.providers import choose_provider
from tests.conftest import REPO

TOOLCHECK = REPO / "examples" / "toolcheck"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def profiles() -> None:
    # A transactional test elsewhere in the session may have emptied the seeded table.
    seed_profiles()


def test_an_installation_with_no_provider_runs_offline_and_says_how_to_add_one() -> None:
    choice = choose_provider(None)
    assert choice.name == "offline" and not choice.fallback
    assert choice.note == (
        "none configured, so offline (the keyless scripted provider); provider 'azure' needs "
        "the key handle 'azure-main', which is not in the keystore: `pit keys add azure-main` "
        "adds it"
    )


def test_a_configured_provider_without_its_key_needs_consent() -> None:
    assert choose_provider(None).name == "offline"
    set_active_profile("azure")
    with pytest.raises(LaunchError, match="azure-main"):
        launch_realm(TOOLCHECK)
    realm = launch_realm(TOOLCHECK, LaunchOptions(allow_provider_fallback=True))
    assert realm.run_config["provider"] == "offline"
    assert realm.run_config["provider_fallback"] is True
    with override_settings(BEARPIT_PROVIDER="nonesuch"), pytest.raises(LaunchError):
        launch_realm(TOOLCHECK)
    with pytest.raises(LaunchError, match="no such profile"):
        launch_realm(TOOLCHECK, LaunchOptions(provider="nonesuch"))
