"""Fixtures for the console's browser tests: one ``pit_serve`` and one Chromium per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page

from tests.console.browser import Served, chromium, serve, signed_in


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serve(tmp_path_factory.mktemp("served")) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as running:
        yield running


@pytest.fixture
def page(browser: Browser, served: Served) -> Iterator[Page]:
    page = signed_in(browser, served)
    try:
        yield page
    finally:
        page.context.close()
