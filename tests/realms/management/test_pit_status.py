"""``manage.py pit_status REALM``: state, event count and spend."""

from __future__ import annotations

import pytest

from tests.fixtures.realms import build_realm

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db, pytest.mark.usefixtures("cli_home")]


def test_status_shows_state_events_and_spend():
    build()
    out = run("pit_status", REALM)
    assert "state:    running\n" in out
    assert "events:   4\n" in out  # the launch's TOOL_MANIFEST and three more
    assert "  alice: $0.0123\n" in out and "  bob: $0.5000\n" in out
    assert "  total: $0.5123\n" in out


def test_status_without_spend():
    build_realm("idle-abc123")
    assert "(no spend recorded)" in run("pit_status", "idle-abc123")
