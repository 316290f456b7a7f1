from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = [
    "tests.fixtures.compat",
    "tests.fixtures.gate",
    "tests.fixtures.homeserver",
    "tests.fixtures.podman",
]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return REPO


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remove the throw-away BEARPIT_HOME that tests/settings.py made for this run."""
    if os.environ.get("BEARPIT_TEST_HOME_OWNER") == str(os.getpid()):
        shutil.rmtree(os.environ["BEARPIT_HOME"], ignore_errors=True)
