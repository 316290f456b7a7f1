"""``manage.py pit_status REALM``: state, event count and spend."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from tests.fixtures.realms import build_realm

from .cli import REALM, build, run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def test_an_unknown_realm_is_a_clear_error():
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run("pit_status", "ghost-000000")


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
