from __future__ import annotations

import pytest

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.transcript import render_transcript, transcript_lines, transcript_page
from tests.chronicle.realmkit import COMMONS, DM_AB, event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "talk-abc123"


def test_one_line_per_message_with_channel_labels_and_senders():
    build_realm(REALM)
    running(REALM, ts=100)
    say(REALM, "Welcome to the realm", 1_000)
    say(REALM, "hello all", 1_500, agent="alice")
    say(REALM, "psst, bob", 2_000, agent="alice", channel=DM_AB)
    say(REALM, "odd room", 2_500, agent="bob", channel="!unknown:bearpit.local")
    assert render_transcript(REALM) == (
        "[1000] commons · @bp_system:bearpit.local: Welcome to the realm\n"
        "[1500] commons · alice: hello all\n"
        "[2000] alice · bob · alice: psst, bob\n"
        "[2500] !unknown:bearpit.local · bob: odd room\n"
    )


def test_messages_are_ordered_by_time_then_arrival():
    build_realm(REALM)
    running(REALM, ts=100)
    say(REALM, "second", 2_000, agent="bob")
    say(REALM, "first", 1_000, agent="alice")
    say(REALM, "also at 2000", 2_000, agent="alice")
    assert [line.split(": ", 1)[1] for line in transcript_lines(REALM)] == [
        "first",
        "second",
        "also at 2000",
    ]
    assert transcript_lines(REALM, limit=2) == transcript_lines(REALM)[1:]


def test_without_a_running_event_rooms_keep_their_ids():
    say("early-abc123", "hi", 10, agent="alice")
    assert render_transcript("early-abc123") == f"[10] {COMMONS} · alice: hi\n"
    assert render_transcript("nothing-here") == ""


def test_the_structured_page_names_every_channel():
    build_realm(REALM)
    running(REALM, ts=100)
    say(REALM, "one", 1_000, agent="alice")
    say(REALM, "two", 1_100, agent="bob", channel="!other:x")
    page = transcript_page(REALM, limit=10)
    assert page["channels"] == {DM_AB: "alice · bob", COMMONS: "commons", "!other:x": "!other:x"}
    assert page["messages"] == [
        {"ts": 1_000, "channel": COMMONS, "sender": "alice", "body": "one"},
        {"ts": 1_100, "channel": "!other:x", "sender": "bob", "body": "two"},
    ]


def test_selectors_read_state_scores_and_spend():
    build_realm(REALM)
    event(REALM, Kind.LIFECYCLE, {"event": "provisioning"}, 1)
    running(REALM, ts=2)
    event(REALM, Kind.LIFECYCLE, {"event": "budget_exhausted", "agent": "alice"}, 3)
    # per-agent lifecycle events never become the realm's state
    assert selectors.lifecycle_state(REALM) == "running"
    event(REALM, Kind.SCORE, {"agent": "alice", "delta": 0.1}, 4)
    event(REALM, Kind.SCORE, {"agent": "alice", "delta": 0.2}, 5)
    event(REALM, Kind.SCORE, {"agent": "bob", "delta": "junk"}, 6)
    assert selectors.scoreboard(REALM) == {"alice": 0.3, "bob": 0.0}
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.5, "tokens_in": 7, "tokens_out": 3}, 7)
    spend = selectors.spend_by_agent(REALM)
    assert spend["bob"].usd == 0.5 and spend["bob"].tokens_in == 7
    assert selectors.last_spend_ms(REALM) == 7
    assert selectors.chronicled_realm_ids()[0] == REALM
