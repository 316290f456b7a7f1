"""Launching from the console: a form built from the package's parameters, a bad value
refused beside its field with nothing launched, and a good launch that runs under
``pit_serve`` to its end."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def realm_state(page: Page, served: Served, realm_id: str) -> dict[str, object]:
    token = (served.home / "api-token").read_text().strip()
    response = page.request.get(
        f"{served.base_url}/api/realms/{realm_id}", headers={"Authorization": f"Bearer {token}"}
    )
    assert response.ok, response.text()
    body: dict[str, object] = response.json()
    return body


def test_a_bad_value_is_refused_beside_its_field_then_a_good_launch_runs(
    page: Page, served: Served
) -> None:
    page.goto(f"{served.base_url}/scenarios/relay/launch")
    topic = page.get_by_label("topic")
    expect(topic).to_have_value("a lighthouse that went dark")
    assert topic.evaluate("e => e.tagName") == "SELECT"
    rounds = page.get_by_label("rounds")
    expect(rounds).to_have_attribute("min", "1")
    expect(rounds).to_have_attribute("max", "5")
    assert_accessible(page, "launch")

    rounds.fill("9")
    page.get_by_role("button", name="Launch").click()
    field = page.locator(".field", has=page.locator("#id_param-rounds"))
    expect(field.locator(".error")).to_have_text('expected at most 5; got "9"')
    expect(page.get_by_role("alert")).to_contain_text("Not launched")
    expect(page.get_by_label("rounds")).to_have_value("9")  # the value stays to be fixed
    assert_accessible(page, "launch-refused")
    token = (served.home / "api-token").read_text().strip()
    listed = page.request.get(
        f"{served.base_url}/api/realms", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert listed["realms"] == []  # nothing was launched

    page.get_by_label("rounds").fill("1")
    page.get_by_label("Realm id").fill("relay-from-console")
    page.get_by_role("button", name="Launch").click()
    page.wait_for_url(re.compile(r"/realms/relay-from-console/$"))

    deadline = time.monotonic() + 300
    status = realm_state(page, served, "relay-from-console")
    while status["state"] not in ("archived", "failed", "interrupted"):
        assert time.monotonic() < deadline, status
        time.sleep(2)
        status = realm_state(page, served, "relay-from-console")
    assert status["state"] == "archived", status
    config = status["config"]
    assert isinstance(config, dict)
    assert config["parameters"]["rounds"] == "1"

    page.goto(f"{served.base_url}/scenarios/relay/launch")
    page.get_by_label("Realm id").fill("relay-from-console")
    page.get_by_role("button", name="Launch").click()
    expect(page.locator("#refused")).to_contain_text("already taken")
