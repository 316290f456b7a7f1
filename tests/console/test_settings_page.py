"""The settings page as the operator uses it: add a provider key (which never shows
again), change a tier's price and see it saved, and a bad price refused beside its field."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SECRET = "sk-browser-NEVERSHOWN-0123456789abcdef"


def open_settings(page: Page, served: Served) -> None:
    page.get_by_role("navigation", name="Console").get_by_role("link", name="Settings").click()
    page.wait_for_url(f"{served.base_url}/settings/")


def test_a_key_added_in_the_page_never_appears_again(page: Page, served: Served) -> None:
    open_settings(page, served)
    expect(page.get_by_role("heading", name="Settings", exact=True)).to_be_visible()
    assert_accessible(page, "settings")
    form = page.get_by_role("form", name="Add a key")
    form.get_by_label("Handle").fill("openai-main")
    form.get_by_label("Provider").fill("openai")
    key = form.get_by_label("Key", exact=True)
    assert key.get_attribute("type") == "password"
    key.fill(SECRET)
    form.get_by_role("button", name="Add the key").click()
    page.wait_for_url(f"{served.base_url}/settings/")
    expect(page.get_by_text("Key openai-main for openai is stored.")).to_be_visible()
    keys = page.get_by_role("region", name="Provider keys")
    row = keys.get_by_role("row").filter(has_text="openai-main")
    expect(row).to_contain_text("openai")
    assert SECRET not in page.inner_text("body")
    assert SECRET not in page.content() and SECRET[-6:] not in page.content()
    page.reload()
    assert SECRET not in page.content()
    assert SECRET not in served.output()

    row.get_by_role("button", name="Remove openai-main").click()
    expect(page.get_by_role("heading", name="Remove the key openai-main?")).to_be_visible()
    assert_accessible(page, "settings-remove-key")
    page.get_by_role("button", name="Remove openai-main").click()
    page.wait_for_url(f"{served.base_url}/settings/")
    expect(page.get_by_text("Key openai-main is removed.")).to_be_visible()
    expect(
        page.get_by_role("region", name="Provider keys").get_by_text("openai-main")
    ).to_have_count(0)


def test_a_tier_price_is_saved_and_a_bad_one_refused_beside_it(page: Page, served: Served) -> None:
    open_settings(page, served)
    tiers = page.get_by_role("form", name="Azure OpenAI azure")
    price = tiers.get_by_label("small input price, $ per million tokens")
    price.fill("3.75")
    tiers.get_by_role("button", name="Save the tiers of azure").click()
    page.wait_for_url(f"{served.base_url}/settings/")
    expect(page.get_by_text("The tiers of azure are saved.")).to_be_visible()
    saved = page.get_by_role("form", name="Azure OpenAI azure")
    expect(saved.get_by_label("small input price, $ per million tokens")).to_have_value("3.75")
    body = page.request.get(f"{served.base_url}/api/settings").json()
    (azure,) = [p for p in body["providers"] if p["name"] == "azure"]
    assert abs(azure["categories"]["small"]["input_cost_per_token"] - 3.75e-6) < 1e-12

    saved.get_by_label("medium output price, $ per million tokens").fill("a lot")
    saved.get_by_role("button", name="Save the tiers of azure").click()
    refused = page.get_by_role("form", name="Azure OpenAI azure")
    cell = refused.get_by_role("cell").filter(
        has=page.get_by_label("medium output price, $ per million tokens")
    )
    expect(cell).to_contain_text("'a lot' is not a number of dollars")
    expect(refused.get_by_label("medium output price, $ per million tokens")).to_have_attribute(
        "aria-invalid", "true"
    )
    assert_accessible(page, "settings-refused")
    after = page.request.get(f"{served.base_url}/api/settings").json()
    assert after["providers"] == body["providers"]
