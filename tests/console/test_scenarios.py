"""The scenarios pages as the operator uses them: every example listed with its README, a
preview, and the editor, which shows a located error while one types and saves a user
copy once the package loads again."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.console.browser import Served, assert_accessible
from tests.e2e.pitrun import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLES = sorted(p.name for p in (REPO / "examples").iterdir() if (p / "project.json").is_file())


def test_every_example_is_listed_with_its_readme(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/scenarios/")
    cards = page.get_by_role("list", name="Scenarios")
    for name in EXAMPLES:
        card = cards.locator(f"#scenario-{name}")
        expect(card).to_be_visible()
        expect(card.get_by_role("link", name=f"Preview {name}")).to_be_visible()
    relay = cards.locator("#scenario-relay")
    expect(relay).to_contain_text("4 agents")
    expect(relay).to_contain_text("README estimate")
    relay.get_by_text("README", exact=True).click()
    expect(relay.get_by_role("heading", name="How it ends")).to_be_visible()
    assert_accessible(page, "scenarios")


def test_a_preview_shows_the_roster_and_rules(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/scenarios/relay/")
    expect(page.get_by_role("heading", name="relay", level=1)).to_be_visible()
    roster = page.get_by_role("table").first
    for agent in ("amber", "basil", "cedar", "editor"):
        expect(roster.get_by_role("rowheader", name=re.compile(agent))).to_be_visible()
    for heading in ("Personas", "How it runs", "Parameters", "README"):
        expect(page.get_by_role("heading", name=heading, level=2)).to_be_visible()
    assert_accessible(page, "scenario-preview")


def test_the_editor_shows_a_located_error_while_typing_and_saves_a_user_copy(
    page: Page, served: Served
) -> None:
    page.goto(f"{served.base_url}/scenarios/toolcheck/edit")
    expect(page.locator("#example-note")).to_contain_text("Saving makes your own copy")
    page.get_by_role("link", name="agents/ping/agent.json").click()
    editor = page.get_by_role("textbox", name="agents/ping/agent.json")
    text = editor.input_value()
    assert '"starve_then_kill"' in text
    broken = text.replace('"starve_then_kill"', '"explode"')
    editor.fill(broken[:-1])
    editor.press_sequentially(broken[-1])  # a keystroke: the check follows the typing

    problems = page.get_by_role("list", name="Problems in agents/ping/agent.json")
    expect(problems).to_contain_text("line 6: budget.on_exhausted")
    expect(problems).to_contain_text("explode")
    expect(page.locator("#summary")).to_contain_text("1 problem")
    pane = page.locator(".pane:not([hidden])")
    expect(pane.locator(".gutter .bad")).to_have_text("6")
    assert_accessible(page, "editor-error")

    editor.fill(text)
    expect(page.locator("#summary")).to_contain_text("No problems")
    expect(problems.locator("li")).to_have_count(0)
    page.get_by_role("textbox", name="agents/ping/agent.json").fill(
        text.replace("First runner", "Lead runner")
    )
    page.get_by_role("button", name="Save as your copy").click()
    page.wait_for_url(f"{served.base_url}/scenarios/toolcheck/")
    expect(page.get_by_role("status")).to_contain_text("Saved as your copy of toolcheck")
    expect(page.get_by_text("Lead runner")).to_be_visible()
    expect(page.get_by_text("This is your copy: it shadows the bundled example")).to_be_visible()

    page.goto(f"{served.base_url}/scenarios/")
    expect(page.locator("#scenario-toolcheck")).to_contain_text("your copy")


def test_a_save_with_errors_is_refused_and_shown(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/scenarios/relay/edit")
    page.get_by_role("link", name="agents/amber/agent.json").click()
    editor = page.get_by_role("textbox", name="agents/amber/agent.json")
    editor.fill(editor.input_value().replace('"id": "amber"', '"id": "Amber!"'))
    page.get_by_role("button", name="Save as your copy").click()
    expect(page.locator("#refused")).to_contain_text("nothing was written")
    expect(page.locator("#summary")).to_contain_text("agents/amber/agent.json, line 2: id")
    # the file at fault is the one shown, its line marked
    expect(page.get_by_role("textbox", name="agents/amber/agent.json")).to_be_visible()
    expect(page.locator(".pane:not([hidden]) .gutter .bad")).to_have_text("2")
    assert_accessible(page, "editor-save-refused")
    page.goto(f"{served.base_url}/scenarios/")
    expect(page.locator("#scenario-relay")).to_contain_text("example")
    expect(page.locator("#scenario-relay")).not_to_contain_text("your copy")


def test_new_and_import_pages(page: Page, served: Served) -> None:
    page.goto(f"{served.base_url}/scenarios/new")
    page.get_by_label("Name").fill("bad name")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#new-name-error")).to_contain_text("expected letters")
    assert_accessible(page, "scenario-new-refused")
    page.get_by_label("Name").fill("hello-realm")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(f"{served.base_url}/scenarios/hello-realm/edit")
    expect(page.get_by_role("status").first).to_contain_text("Created hello-realm")
    assert_accessible(page, "editor")

    page.goto(f"{served.base_url}/scenarios/import")
    page.get_by_role("button", name="Import").click()
    expect(page.locator("#archive-error")).to_contain_text("choose a zip file or a folder")
    assert_accessible(page, "scenario-import")

    # A picked folder keeps its files' paths inside it, and its name names the scenario.
    page.get_by_label("Or a folder").set_input_files(REPO / "examples" / "council")
    page.get_by_role("textbox", name="Name").fill("my-council")
    page.get_by_role("button", name="Import").click()
    page.wait_for_url(f"{served.base_url}/scenarios/my-council/")
    expect(page.get_by_role("status").first).to_contain_text("Imported my-council")
    expect(page.get_by_role("heading", name="Roster")).to_be_visible()
