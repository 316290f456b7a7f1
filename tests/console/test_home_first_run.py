"""A first run as the operator makes it: the empty home page, Launch toolcheck, the realm
page, the run to its verdict on the offline provider (served by ``pit_serve``), then the
run on the home page and in the history with its outcome and spend."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(360)]


def wait_for_end(page: Page, served: Served, realm_id: str, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    body: dict[str, Any] = {}
    while time.monotonic() < deadline:
        # The browser's own session reads the API, as the console's scripts do.
        body = page.request.get(f"{served.base_url}/api/realms/{realm_id}").json()
        if body.get("state") in ("archived", "failed", "interrupted"):
            return body
        time.sleep(1.0)
    raise AssertionError(f"{realm_id} did not end within {timeout_s}s: {body}\n{served.output()}")


def test_a_first_run_from_the_home_page_to_the_history(page: Page, served: Served) -> None:
    token = (served.home / "api-token").read_text().strip()
    expect(page.get_by_role("heading", name="Nothing has run here yet")).to_be_visible()
    expect(page.get_by_text("0 of 6 realms active")).to_be_visible()
    assert_accessible(page, "home-empty")
    # A second tab on the home page, never reloaded: what it shows later came live.
    watcher = page.context.new_page()
    watcher.goto(f"{served.base_url}/")
    expect(watcher.get_by_text("No run has ended yet.")).to_be_visible()

    page.get_by_role("button", name="Launch toolcheck").click()
    page.wait_for_url(re.compile(r"/realms/[a-z0-9-]+/$"))
    realm_id = page.url.rstrip("/").rsplit("/", 1)[1]
    assert realm_id.startswith("toolcheck"), realm_id

    body = wait_for_end(page, served, realm_id, timeout_s=200)
    assert body["state"] == "archived" and body["outcome"], body
    live_row = watcher.get_by_role("region", name="Recent runs").get_by_role("row")
    expect(live_row.filter(has_text=realm_id)).to_contain_text(body["outcome"][:40])
    watcher.close()

    page.get_by_role("link", name="Bearpit home").click()
    recent = page.get_by_role("region", name="Recent runs")
    row = recent.get_by_role("row").filter(has_text=realm_id)
    expect(row).to_contain_text(body["outcome"][:40])
    expect(row).to_contain_text("archived")
    expect(row).to_contain_text("$")
    expect(page.get_by_text("0 of 6 realms active")).to_be_visible()
    expect(page.get_by_role("heading", name="Nothing has run here yet")).to_have_count(0)
    assert token not in page.content()
    assert_accessible(page, "home-after-run")

    page.get_by_role("navigation", name="Console").get_by_role("link", name="History").click()
    page.wait_for_url(f"{served.base_url}/history/")
    row = page.get_by_role("row").filter(has_text=realm_id)
    expect(row).to_contain_text(body["outcome"][:40])
    expect(row).to_contain_text("toolcheck")
    expect(row.get_by_role("link", name=f"Archived transcript of {realm_id}")).to_be_visible()
    assert_accessible(page, "history")

    page.get_by_label("State").select_option("failed")
    expect(page.get_by_text("No run matches these filters")).to_be_visible()
    assert "state=failed" in page.url
    page.get_by_label("State").select_option("archived")
    expect(page.get_by_role("row").filter(has_text=realm_id)).to_be_visible()

    page.get_by_role("link", name=f"Report of {realm_id}").click()
    expect(page.get_by_role("heading", name=f"Report of {realm_id}")).to_be_visible()
    expect(page.locator("pre.report")).to_contain_text(body["outcome"][:40])
    assert_accessible(page, "history-report")
