"""The realm page as the operator watches a realm: launched through the API of a served
platform, opened as it starts, and followed live to the verdict without a reload."""

from __future__ import annotations

import time

import httpx
import pytest
from playwright.sync_api import Page

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

REALM = "tc-page-1"


def _api(served: Served) -> httpx.Client:
    token = (served.home / "api-token").read_text().strip()
    return httpx.Client(
        base_url=served.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _count(page: Page, selector: str) -> int:
    return int(page.evaluate(f"document.querySelectorAll({selector!r}).length"))


def test_a_running_realm_streams_into_its_page_to_the_verdict(page: Page, served: Served) -> None:
    with _api(served) as api:
        started = api.post("/api/realms", json={"package": "toolcheck", "realm_id": REALM})
        assert started.status_code == 202, started.text

        page.goto(f"{served.base_url}/realms/{REALM}/")
        # Marks that only survive if the page is never reloaded, and every state it told.
        page.evaluate(
            "window.__same_page = true; window.__states = [];"
            "document.body.addEventListener('bearpit:state',"
            " e => window.__states.push(e.detail.state))"
        )
        page.wait_for_function("document.body.dataset.live === 'ready'", timeout=30_000)
        assert page.get_by_role("heading", name=REALM).is_visible()
        assert page.locator("#realm-panels").get_attribute("hx-get") == f"/realms/{REALM}/panels"
        messages_at_open = _count(page, "#transcript li.msg")
        spend_at_open = page.locator(".agent-card [data-field=spend]").all_inner_texts()

        page.wait_for_function(
            f"document.querySelectorAll('#transcript li.msg').length > {messages_at_open}",
            timeout=120_000,
        )
        page.wait_for_function(
            "[...document.querySelectorAll('.agent-card [data-field=spend]')]"
            ".some(n => n.textContent !== '$0.0000')",
            timeout=120_000,
        )
        assert page.locator("#spend-chart canvas").count() == 1
        assert_accessible(page, "realm-running")

        page.wait_for_function(
            "document.getElementById('realm-state').textContent === 'archived'", timeout=180_000
        )
        page.wait_for_selector("#realm-outcome:not([hidden])")
        assert page.evaluate("window.__same_page") is True
        states = page.evaluate("window.__states")
        assert states[-1] == "archived" and "concluding" in states, states
        assert page.locator("#realm-state").inner_text() == "archived"

        status = api.get(f"/api/realms/{REALM}").json()
        assert (
            status["outcome"] and status["outcome"] in page.locator("#realm-outcome").inner_text()
        )
        # Everything the Chronicle holds is on the page once: nothing missed, nothing twice.
        time.sleep(1.0)  # the last pushes of the teardown
        chronicled = api.get(f"/api/realms/{REALM}/transcript").json()["messages"]
        shown = page.evaluate(
            "[...document.querySelectorAll('#transcript li.msg')].map(li => li.dataset.eventId)"
        )
        assert len(shown) == len(set(shown)) == len(chronicled), (len(shown), len(chronicled))
        for agent, usd in status["spend"].items():
            text = page.locator(f".agent-card[data-agent={agent}] [data-field=spend]").inner_text()
            assert text == f"${usd:.4f}", (agent, text, usd)
        assert spend_at_open != page.locator(".agent-card [data-field=spend]").all_inner_texts()
        timeline = page.locator("#timeline").inner_text()
        assert "verdict:" in timeline and "realm archived" in timeline
        assert_accessible(page, "realm-ended")

    # Opened again once it ended, the page shows all of it from the server.
    page.reload()
    page.wait_for_function("document.body.dataset.live === 'ready'", timeout=30_000)
    assert _count(page, "#transcript li.msg") == len(chronicled)
    assert page.locator("#realm-state").inner_text() == "archived"
    assert page.locator("#spend-chart canvas").count() == 1
    assert chronicled[0]["body"][:30] in page.locator("#transcript").inner_text()

    # The channel filters: the referee's own posts, then the Commons (every post here).
    visible = "[...document.querySelectorAll('#transcript li.msg')].filter(li => !li.hidden)"
    referee = page.get_by_role("button", name="Referee (umpire)")
    referee.click()
    assert referee.get_attribute("aria-pressed") == "true"
    senders = page.evaluate(f"{visible}.map(li => li.dataset.agent)")
    assert senders and set(senders) == {"umpire"}, senders
    page.get_by_role("button", name="commons").click()
    assert page.evaluate(f"{visible}.length") == len(chronicled)
    assert_accessible(page, "realm-filtered")


def test_an_unknown_realm_says_so(page: Page, served: Served) -> None:
    response = page.goto(f"{served.base_url}/realms/no-such-realm/")
    assert response is not None and response.status == 404
    assert page.get_by_role("heading", name="No realm “no-such-realm”").is_visible()
    assert_accessible(page, "realm-unknown")
