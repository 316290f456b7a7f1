"""The skills page: the built-in skills, and one skill's text."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_the_builtin_skills_are_listed_and_readable(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/skills/")
    table = page.get_by_role("table")
    for ref in ("agent-basics", "referee-basics", "competitor"):
        expect(table.get_by_role("link", name=ref)).to_be_visible()
    expect(table).to_contain_text("every participant")
    assert_accessible(page, "skills")
    table.get_by_role("link", name="agent-basics").click()
    page.wait_for_url(f"{served.base_url}/skills/builtin/agent-basics/")
    expect(page.get_by_text("happens through a tool call")).to_be_visible()
    assert_accessible(page, "skill")
