from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.report import render_report
from tests.chronicle.realmkit import event, make_realm, running, say

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "duel-abc123"


def chronicle_a_duel(*, verdict: bool) -> None:
    make_realm(REALM, project={"metadata": {"name": "Rock Duel"}})
    running(REALM, ts=1_000, project={"metadata": {"name": "Rock Duel"}})
    say(REALM, "ready", 1_100, agent="alice")
    say(REALM, "rock", 1_200, agent="bob")
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.002, "tokens_in": 10}, 1_300)
    event(REALM, Kind.SPEND, {"agent": "alice", "usd": 0.01, "tokens_in": 5}, 1_310)
    event(REALM, Kind.SPEND, {"agent": "alice", "usd": 0.00234, "tokens_in": 5}, 1_320)
    event(REALM, Kind.SCORE, {"agent": "alice", "delta": 1, "reason": "r1"}, 1_400)
    event(REALM, Kind.SCORE, {"agent": "bob", "delta": 2.5, "reason": "r1"}, 1_410)
    event(REALM, Kind.SCORE, {"agent": "bob", "delta": -0.5, "reason": "penalty: x"}, 1_420)
    event(REALM, Kind.VIOLATION, {"agent": "bob", "reason": "talked out of turn"}, 1_421)
    event(REALM, Kind.TOOL_RESULT, {"agent": "alice", "tool": "web_fetch", "ok": True}, 1_500)
    event(REALM, Kind.TOOL_RESULT, {"agent": "bob", "tool": "web_fetch", "cost_usd": 0.001}, 1_501)
    event(REALM, Kind.TOOL_RESULT, {"agent": "bob", "tool": "web_fetch", "cost_usd": 0.002}, 1_502)
    event(REALM, Kind.TALLY, {"round": "1", "result": "bob"}, 1_550)
    if verdict:
        event(REALM, Kind.VERDICT, {"outcome": "bob wins 2:1", "final": True}, 1_600)
    event(
        REALM,
        Kind.LIFECYCLE,
        {"event": "concluding", "reason": "duration", "detail": "time limit 1h reached"},
        1_700,
    )


def test_the_report_of_a_realm_with_a_verdict():
    chronicle_a_duel(verdict=True)
    assert render_report(REALM) == (
        "# Rock Duel — final report\n"
        "\n"
        "**Outcome:** bob wins 2:1\n"
        "\n"
        "## Scores\n"
        "- bob: 2\n"
        "- alice: 1\n"
        "\n"
        "## Violations\n"
        "- bob: talked out of turn\n"
        "\n"
        "## Spend\n"
        "- alice: $0.0123\n"
        "- bob: $0.0020\n"
        "- **total: $0.0143**\n"
        "\n"
        "## Tool use\n"
        "- alice: 1 call\n"
        "- bob: 2 calls, $0.0030\n"
        "- **total: $0.0030**\n"
        "\n"
        "_2 messages, 14 events chronicled._\n"
    )


def test_without_a_verdict_the_headline_says_how_the_realm_concluded():
    chronicle_a_duel(verdict=False)
    report = render_report(REALM)
    assert "**Concluded:** duration — time limit 1h reached\n" in report
    assert "**Outcome:**" not in report
    # a tally is never a verdict
    assert "bob" not in report.split("\n")[2]


def test_an_empty_realm_reports_no_spend_and_an_open_outcome():
    make_realm("quiet-abc123", project={"metadata": {"name": "Quiet"}})
    assert render_report("quiet-abc123") == (
        "# Quiet — final report\n"
        "\n"
        "**Outcome:** —\n"
        "\n"
        "## Spend\n"
        "- (no spend recorded)\n"
        "\n"
        "_0 messages, 0 events chronicled._\n"
    )


def test_a_realm_known_only_to_the_chronicle_is_titled_by_its_id():
    event("ghost-abc123", Kind.LIFECYCLE, {"event": "provisioning"}, 5)
    assert render_report("ghost-abc123").startswith("# Realm ghost-abc123 — final report\n")
