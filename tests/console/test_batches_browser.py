"""The research instrument in the console, as a person uses it on a served platform:
a batch of toolcheck started from its scenario page runs to its end in the background
(one run at a time, so the second run is queued by the server's driver, never by a
read) and its page shows k of N with the interval; from one of its realms, the agent's
own view shows the real request of a real run; and the launch form shows a forecast
that follows the provider chosen."""

from __future__ import annotations

import re
import sqlite3
import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]


def _api(served: Served) -> httpx.Client:
    token = (served.home / "api-token").read_text().strip()
    return httpx.Client(
        base_url=served.base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def _batch_row(served: Served, batch_id: str) -> tuple[str, str]:
    """The batch's state and runs straight from the database: a read that drives nothing."""
    db = sqlite3.connect(served.home / "bearpit.sqlite3")
    try:
        state, runs = db.execute(
            "SELECT state, runs FROM realms_batch WHERE batch_id = ?", (batch_id,)
        ).fetchone()
    finally:
        db.close()
    return str(state), str(runs)


def test_a_console_batch_runs_to_its_end_and_shows_k_of_n(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/scenarios/toolcheck/")
    page.get_by_role("link", name="Run a batch").click()
    page.wait_for_url(re.compile(r"/scenarios/toolcheck/batch$"))
    page.get_by_label("Runs").fill("0")
    page.get_by_role("button", name="Start the batch").click()
    expect(page.locator("#id_n_error")).to_contain_text("greater than or equal to 1")
    assert_accessible(page, "batch-start-refused")

    page.get_by_label("Runs").fill("2")
    page.get_by_label("At once").fill("1")
    page.get_by_role("button", name="Start the batch").click()
    page.wait_for_url(re.compile(r"/batches/batch-toolcheck-[0-9a-f]{6}/$"))
    batch_id = page.url.rstrip("/").rsplit("/", 1)[1]
    expect(page.locator("#batch-state")).to_contain_text("0 of 2 runs ended")
    assert_accessible(page, "batch-running")

    # Nobody reads the batch but the database until its first run has ended and the
    # server has queued the second: the server drives it.
    page.goto("about:blank")
    deadline = time.monotonic() + 300
    while _batch_row(served, batch_id)[1].count('"realm_id": "toolcheck-') < 2:
        assert time.monotonic() < deadline, served.output()[-3000:]
        time.sleep(1)

    # Its page follows it live, without a reload, to its end.
    page.goto(f"{served.base_url}/batches/{batch_id}/")
    page.evaluate("window.__same_page = true")
    expect(page.locator("#batch-state")).to_contain_text("finished", timeout=240_000)
    assert page.evaluate("window.__same_page === true")
    assert _batch_row(served, batch_id)[0] == "finished"
    expect(page.locator("#batch-k")).to_contain_text("2 of 2 reached the intended ending")
    expect(page.locator("#batch-k")).to_contain_text("95% interval (Wilson) 34% to 100%")
    assert page.locator("table.runs tbody tr").count() == 2
    assert_accessible(page, "batch-finished")
    page.goto(f"{served.base_url}/batches/")
    expect(page.locator("table.batches")).to_contain_text("2 of 2")
    assert_accessible(page, "batches")

    # One of its realms, and what a player's model saw in it.
    page.goto(f"{served.base_url}/batches/{batch_id}/")
    page.locator("table.runs tbody tr").first.get_by_role("link").first.click()
    page.wait_for_url(re.compile(r"/realms/toolcheck-[0-9a-f]{6}/$"))
    realm_id = page.url.rstrip("/").rsplit("/", 1)[1]
    page.locator(f'a[href="/realms/{realm_id}/agents/ping/view"]').click()
    page.wait_for_url(re.compile(rf"/realms/{realm_id}/agents/ping/view$"))
    with _api(served) as api:
        seen = api.get(f"/api/realms/{realm_id}/agents/ping/view").json()
    assert seen["system"] and seen["history"], seen
    expect(page.locator("#system-prompt")).to_have_text(seen["system"])
    expect(page.locator("#call-h")).to_be_visible()
    expect(page.locator("#history > li")).to_have_count(len(seen["history"]))
    # Beside it, the transcript split at the call: its own line was posted after it.
    expect(page.locator("#call-marker")).to_be_in_viewport()
    assert seen["reply"]["content"], seen["reply"]
    expect(page.locator("#transcript-after")).to_contain_text(seen["reply"]["content"])
    assert_accessible(page, "agent-view")

    # The slider picks the first call: the page becomes that call's view.
    slider = page.locator("#call-slider")
    slider.evaluate("s => { s.value = '0'; s.dispatchEvent(new Event('change')); }")
    page.wait_for_url(re.compile(r"\?at=\d+$"))
    at = page.url.rsplit("=", 1)[1]
    with _api(served) as api:
        first = api.get(f"/api/realms/{realm_id}/agents/ping/view?at=%23{at}").json()
    expect(page.locator("#call-number")).to_have_text("1")
    expect(page.locator("#history > li")).to_have_count(len(first["history"]))
    assert_accessible(page, "agent-view-first-call")


def test_the_launch_form_shows_a_forecast(page: Page, served: Served) -> None:
    with _api(served) as api:
        before = api.get("/api/realms").json()["realms"]
    page.goto(f"{served.base_url}/scenarios/toolcheck/launch")
    forecast = page.locator("#forecast")
    expect(forecast.locator("table.forecast")).to_be_visible(timeout=60_000)
    for agent in ("umpire", "ping", "pong"):
        expect(forecast.locator("tbody")).to_contain_text(agent)
    expect(page.locator("#forecast-binds")).not_to_be_empty()
    expect(forecast).to_contain_text("On provider offline")
    assert_accessible(page, "launch-forecast")

    page.get_by_label("Provider").select_option("openai")
    expect(forecast).to_contain_text("On provider openai", timeout=60_000)
    with _api(served) as api:
        assert api.get("/api/realms").json()["realms"] == before  # nothing was launched
