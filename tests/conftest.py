from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.compat",
    "tests.fixtures.console",
    "tests.fixtures.gate",
    "tests.fixtures.homeserver",
    "tests.fixtures.podman",
    "tests.fixtures.realms",
]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the throw-away BEARPIT_HOME that tests/settings.py made for this run (also
    after a usage error, when no session ran)."""
    if os.environ.get("BEARPIT_TEST_HOME_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["BEARPIT_HOME"], ignore_errors=True)


def _needs_postgres(item: pytest.Item) -> bool:
    if item.get_closest_marker("postgres"):
        return True
    marker = item.get_closest_marker("django_db")
    databases = marker.kwargs.get("databases") if marker else None
    return "postgres" in (databases or ())


def pytest_runtest_setup(item: pytest.Item) -> None:
    from django.conf import settings

    if _needs_postgres(item) and not getattr(settings, "POSTGRES_ANSWERS", True):
        url = getattr(settings, "POSTGRES_URL", "")
        pytest.fail(
            f"PostgreSQL does not answer at {url}: run scripts/test (it starts "
            "a throw-away server) or point BEARPIT_TEST_POSTGRES_URL at one",
            pytrace=False,
        )
