from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.fixtures.homeserver"]

REPO = Path(__file__).resolve().parent.parent
COMPAT = REPO.parent / "shared" / "compat" / "bearpit-examples"


@pytest.fixture
def repo_root() -> Path:
    return REPO
