from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from chronicle.tail import tail_lines
from tests.chronicle.realmkit import DM_AB, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "tail-abc123"
TODAY = date(2026, 12, 1)


def ms(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def test_times_are_readable_with_the_date_only_when_not_today(settings):
    settings.TIME_ZONE = "UTC"
    build_realm(REALM)
    running(REALM, ts=ms("2026-11-30T08:00:00"))
    say(REALM, "yesterday", ms("2026-11-30T23:59:59.900"), agent="alice")
    say(REALM, "today", ms("2026-12-01T09:05:07.250"), agent="bob", channel=DM_AB)
    assert tail_lines(REALM, limit=5, today=TODAY) == [
        "[2026-11-30 23:59:59] commons · alice: yesterday",
        "[09:05:07] alice · bob · bob: today",
    ]


def test_times_are_shown_in_the_configured_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    build_realm(REALM)
    running(REALM, ts=ms("2026-12-01T08:00:00"))
    say(REALM, "late", ms("2026-12-01T23:30:00"), agent="alice")
    assert tail_lines(REALM, limit=5, today=date(2026, 12, 2)) == [
        "[00:30:00] commons · alice: late"
    ]


def test_one_line_per_message_newlines_collapsed_and_long_text_cut(settings):
    settings.TIME_ZONE = "UTC"
    build_realm(REALM)
    running(REALM, ts=ms("2026-12-01T08:00:00"))
    say(REALM, "You are the referee.\n\n  Rules:\n- one\n- two", ms("2026-12-01T09:00:00"))
    say(REALM, "x" * 500, ms("2026-12-01T09:00:01"), agent="alice")
    first, second = tail_lines(REALM, limit=5, today=TODAY)
    assert (
        first
        == "[09:00:00] commons · @bp_system:bearpit.local: You are the referee. Rules: - one - two"
    )
    assert second.startswith("[09:00:01] commons · alice: xxx")
    assert second.endswith("x…")
    assert len(second) <= 200


def test_full_prints_the_whole_text_with_its_lines(settings):
    settings.TIME_ZONE = "UTC"
    build_realm(REALM)
    running(REALM, ts=ms("2026-12-01T08:00:00"))
    say(REALM, "Rules:\n- one\n- two", ms("2026-12-01T09:00:00"), agent="umpire")
    say(REALM, "y" * 500, ms("2026-12-01T09:00:01"), agent="alice")
    assert tail_lines(REALM, limit=5, full=True, today=TODAY) == [
        "[09:00:00] commons · umpire: Rules:\n    - one\n    - two",
        "[09:00:01] commons · alice: " + "y" * 500,
    ]


def test_only_the_last_messages():
    build_realm(REALM)
    running(REALM, ts=100)
    for i in range(5):
        say(REALM, f"m{i}", 1_000 + i, agent="alice")
    assert [line.rsplit(": ", 1)[1] for line in tail_lines(REALM, limit=2)] == ["m3", "m4"]
