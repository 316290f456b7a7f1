"""The skills page: the built-in skills, one skill's text, and a user skill imported from
its SKILL.md, read, and deleted."""

from __future__ import annotations

import pytest
from playwright.sync_api import FilePayload, Page, expect

from tests.console.browser import Served, assert_accessible

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

SKILL = b"---\nname: haggler\ndescription: Bargain hard.\n---\n# Haggling\n\nOpen low.\n"


def test_the_builtin_skills_are_listed_and_readable(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/skills/")
    builtin = page.get_by_role("region", name="Built-in")
    for ref in ("agent-basics", "referee-basics", "competitor"):
        expect(builtin.get_by_role("link", name=ref)).to_be_visible()
    expect(builtin).to_contain_text("every participant")
    assert_accessible(page, "skills")
    builtin.get_by_role("link", name="agent-basics").click()
    page.wait_for_url(f"{served.base_url}/skills/builtin/agent-basics/")
    expect(page.get_by_text("happens through a tool call")).to_be_visible()
    expect(page.get_by_role("link", name="Delete this skill")).to_have_count(0)
    assert_accessible(page, "skill")


def test_a_user_skill_is_imported_read_and_deleted(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/skills/import")
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#upload-error")).to_contain_text("choose a skill")
    assert_accessible(page, "skill-import-refused")
    payload: FilePayload = {"name": "SKILL.md", "mimeType": "text/markdown", "buffer": SKILL}
    page.get_by_label("Zip or SKILL.md").set_input_files(files=payload)
    page.get_by_role("button", name="Import").click()
    page.wait_for_url(f"{served.base_url}/skills/user/haggler/")
    expect(page.get_by_role("heading", name="Haggling")).to_be_visible()
    page.goto(f"{served.base_url}/skills/")
    yours = page.get_by_role("region", name="Yours")
    expect(yours.get_by_role("link", name="haggler")).to_be_visible()
    yours.get_by_role("link", name="haggler").click()
    page.get_by_role("link", name="Delete this skill").click()
    expect(page.get_by_role("heading", name="Delete the skill haggler?")).to_be_visible()
    assert_accessible(page, "skill-delete-confirm")
    page.get_by_role("button", name="Delete the skill haggler").click()
    page.wait_for_url(f"{served.base_url}/skills/")
    expect(page.get_by_role("status")).to_contain_text("Deleted the skill haggler")
    expect(page.get_by_role("region", name="Yours")).to_contain_text("None yet")
