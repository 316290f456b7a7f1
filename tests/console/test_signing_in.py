"""Signing in as the operator does: open the URL ``pit_serve`` printed, land on the
console, reach the admin and come back, with no token left in the address bar."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page

from tests.console.browser import Served, assert_accessible, screenshot

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_the_printed_url_signs_in_and_leaves_no_token_behind(page: Page, served: Served) -> None:
    token = (served.home / "api-token").read_text().strip()
    assert page.url == f"{served.base_url}/"
    assert token not in page.url
    nav = page.get_by_role("navigation", name="Console")
    for name in ("Realms", "Scenarios", "Skills", "History", "Settings"):
        assert nav.get_by_role("link", name=name).is_visible()
    assert token not in page.content()
    assert_accessible(page, "home")


def test_the_admin_opens_with_its_stylesheets_and_links_back(page: Page, served: Served) -> None:
    page.get_by_role("link", name="Admin").click()
    page.wait_for_url(f"{served.base_url}/admin/")
    assert page.get_by_role("heading", name="Site administration").is_visible()
    # Styled: the admin's own sheet loaded (an unstyled page keeps the default white header).
    header_bg = page.evaluate("getComputedStyle(document.querySelector('#header')).backgroundColor")
    assert header_bg == "rgb(43, 37, 32)", header_bg
    screenshot(page, "admin")
    page.get_by_role("link", name="Console").click()
    page.wait_for_url(f"{served.base_url}/")


def test_a_browser_that_has_not_signed_in_is_told_how(browser: Browser, served: Served) -> None:
    context = browser.new_context()
    try:
        anonymous = context.new_page()
        response = anonymous.goto(f"{served.base_url}/")
        assert response is not None and response.status == 403
        assert "--print-url" in anonymous.content()
        assert_accessible(anonymous, "signed-out")
    finally:
        context.close()
