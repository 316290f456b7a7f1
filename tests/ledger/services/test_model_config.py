"""``save_model_config``: tiers replaced as given, every entry checked before any is
saved, each refusal located."""

from __future__ import annotations

import pytest

from ledger.models import ProviderProfile
from ledger.services.model_config import ModelConfigError, save_model_config

pytestmark = [pytest.mark.django_db]

TIER = {"model": "m-1", "input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}


def categories() -> dict[str, dict[str, object]]:
    return {p.name: p.categories for p in ProviderProfile.objects.all()}


def test_an_edit_replaces_its_tiers_and_marks_the_profile_edited(profiles):
    assert save_model_config({"anthropic": {"categories": {"large": TIER}}}) == ["anthropic"]
    row = ProviderProfile.objects.get(name="anthropic")
    assert row.categories["large"] == {**TIER, "effort": None, "context_length": None}
    assert list(row.categories) == ["small", "medium", "large"]
    assert row.source == ProviderProfile.Source.USER


def test_an_edit_that_changes_nothing_saves_nothing(profiles):
    small = dict(ProviderProfile.objects.get(name="azure").categories["small"])
    assert save_model_config({"azure": {"categories": {"small": small}}}) == []
    assert ProviderProfile.objects.get(name="azure").source == ProviderProfile.Source.SEED


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        ({}, "providers"),
        ({"azure": "small"}, "providers.azure"),
        ({"azure": {"categories": [TIER]}}, "providers.azure.categories"),
        ({"azure": {"categories": {"small": "m"}}}, "providers.azure.categories.small"),
        (
            {"azure": {"categories": {"small": {**TIER, "context_length": -1}}}},
            "providers.azure.categories.small.context_length",
        ),
        (
            {"openai": {"categories": {"small": TIER}}, "offline": {"categories": {"tiny": TIER}}},
            "providers.offline.categories.tiny",
        ),
    ],
)
def test_a_bad_entry_is_located_and_nothing_is_saved(profiles, edit, field):
    before = categories()
    with pytest.raises(ModelConfigError) as caught:
        save_model_config(edit)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert categories() == before


def test_the_scripted_provider_may_price_a_tier_at_zero(profiles):
    save_model_config({"offline": {"categories": {"small": {**TIER, "input_cost_per_token": 0}}}})
    assert (
        ProviderProfile.objects.get(name="offline").categories["small"]["input_cost_per_token"] == 0
    )
