"""The realm page's panels as the operator uses them, on a served platform: a message
into a running realm shows in its transcript, a stop from the console ends it as
``manual``, and a finished toolcheck shows its report, integrity and configuration, and
runs again from its exact snapshot."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _api(served: Served) -> httpx.Client:
    token = (served.home / "api-token").read_text().strip()
    return httpx.Client(
        base_url=served.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _launch(served: Served, realm_id: str, **options: object) -> None:
    with _api(served) as api:
        body = {"package": "toolcheck", "realm_id": realm_id, **options}
        started = api.post("/api/realms", json=body)
        assert started.status_code == 202, started.text


def _status(served: Served, realm_id: str) -> dict[str, object]:
    with _api(served) as api:
        body = api.get(f"/api/realms/{realm_id}").json()
        assert isinstance(body, dict)
        return body


def _wait_for_state(page: Page, state: str, timeout: int) -> None:
    page.wait_for_function(
        f"document.getElementById('realm-state').textContent === {state!r}", timeout=timeout
    )


def test_a_message_reaches_the_transcript_and_a_stop_ends_the_realm_as_manual(
    page: Page, served: Served
) -> None:
    realm_id = "tc-panels-stop"
    # Without turns the umpire's round never completes, so the realm is still running when
    # the stop comes however slowly the machine gets there: only the stop can end it.
    _launch(served, realm_id, turns={"enabled": False})
    page.goto(f"{served.base_url}/realms/{realm_id}/")
    expect(page.locator("#panel-controls")).to_be_visible(timeout=15_000)

    _wait_for_state(page, "running", 60_000)
    # The panels follow the state: the message box appears once the realm runs.
    text = page.get_by_label("Message", exact=True)
    expect(text).to_be_visible(timeout=15_000)
    text.fill("Operator check: please keep going.")  # the line looked for below
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#message-note")).to_have_text("Delivered to every live agent.")
    said = "Operator check: please keep going."
    operator_line = page.locator("#transcript li.msg", has_text=said)
    expect(operator_line).to_have_count(1, timeout=30_000)
    assert "[operator]" in operator_line.inner_text()

    page.get_by_text("Stop this realm…").click()
    expect(page.locator("#stop-confirm")).to_contain_text("cannot be resumed")
    assert_accessible(page, "realm-panels-running")
    page.get_by_role("button", name="Stop now").click()
    expect(page.locator("#stop-note")).to_contain_text("concludes as manual")
    expect(page.get_by_role("button", name="Stop now")).to_have_count(0)

    _wait_for_state(page, "archived", 120_000)
    status = _status(served, realm_id)
    conclusion = status["conclusion"]
    assert isinstance(conclusion, dict) and conclusion["reason"] == "manual", status
    # Once it has ended the stop is offered no more, and the report says how it ended.
    expect(page.locator("#stop-why")).to_contain_text("nothing to stop", timeout=15_000)
    expect(page.locator("#report-body")).to_contain_text("manual")


def test_a_finished_toolcheck_shows_its_report_integrity_and_configuration(
    page: Page, served: Served
) -> None:
    realm_id = "tc-panels-done"
    _launch(served, realm_id)
    page.goto(f"{served.base_url}/realms/{realm_id}/")
    _wait_for_state(page, "archived", 240_000)

    report = page.locator("#report-body")
    expect(report).to_be_visible(timeout=15_000)
    status = _status(served, realm_id)
    outcome = status["outcome"]
    assert isinstance(outcome, str) and outcome
    expect(report.get_by_role("heading", name="Termination", level=3)).to_be_visible()
    expect(report).to_contain_text(outcome)
    expect(page.locator("#integrity-state")).to_have_attribute("data-integrity", "ok")
    expect(page.locator("#integrity-state")).to_contain_text("no findings")

    expect(page.locator("#config-provider")).to_have_text("offline")
    agents = page.locator("#config-agents tbody th").all_inner_texts()
    assert [a.split()[0] for a in agents] == ["ping", "pong", "umpire"], agents
    conditions = page.locator("#config-termination li code:first-child").all_inner_texts()
    assert conditions == ["referee_verdict", "duration", "stall"]
    expect(page.locator("#stop-why")).to_contain_text("nothing to stop")
    expect(page.locator("#panel-message")).to_contain_text("running realm only")
    assert_accessible(page, "realm-panels-finished")

    # Run again from the exact snapshot: the consequence is spelled out, then the new
    # realm's page opens.
    page.get_by_text("Run again…").click()
    expect(page.locator("#rerun-confirm")).to_contain_text("exactly as this realm stored it")
    assert_accessible(page, "realm-panels-rerun")
    page.get_by_role("button", name="Exact snapshot").click()
    page.wait_for_url(re.compile(rf"{re.escape(served.base_url)}/realms/(?!{realm_id}/)[^/]+/$"))
    new_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    assert new_id != realm_id
    expect(page.get_by_role("heading", name=new_id)).to_be_visible()
    with _api(served) as api:
        assert api.post(f"/api/realms/{new_id}/stop").status_code == 202
