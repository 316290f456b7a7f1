from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.report import render_report
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "duel-abc123"


def chronicle_a_duel(*, verdict: bool) -> None:
    build_realm(REALM, name="Rock Duel")
    running(REALM, ts=1_000, name="Rock Duel")
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
        event(
            REALM,
            Kind.VERDICT,
            {
                "outcome": "bob wins 2:1",
                "reasons": ["bob took round 1", "alice forfeited round 2"],
                "issued_by": "judge",
                "final": True,
            },
            1_600,
        )
    event(
        REALM,
        Kind.LIFECYCLE,
        {"event": "concluding", "reason": "duration", "detail": "time limit 1h reached"},
        1_700,
    )


def test_the_report_of_a_realm_with_a_verdict():
    chronicle_a_duel(verdict=True)
    # fourteen events chronicled here and the launch's TOOL_MANIFEST
    assert render_report(REALM) == (
        "# Rock Duel — final report\n"
        "\n"
        "**Outcome:** bob wins 2:1\n"
        "\n"
        "## Ruling\n"
        "bob wins 2:1 — ruled by judge\n"
        "- bob took round 1\n"
        "- alice forfeited round 2\n"
        "\n"
        "## Termination\n"
        "- kind: `duration`\n"
        "- evidence: time limit 1h reached\n"
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
        "_2 messages, 15 events chronicled._\n"
    )


def test_the_ruling_gives_its_reasons_even_over_tied_scores():
    build_realm(REALM)
    running(REALM, ts=1_000)
    event(REALM, Kind.SCORE, {"agent": "ping", "delta": 1}, 1_100)
    event(REALM, Kind.SCORE, {"agent": "pong", "delta": 1}, 1_110)
    event(
        REALM,
        Kind.VERDICT,
        {
            "outcome": "ping wins the relay",
            "reasons": "tied on points;\nping relayed first",
            "issued_by": "umpire",
            "final": True,
        },
        1_200,
    )
    event(
        REALM,
        Kind.LIFECYCLE,
        {
            "event": "concluding",
            "reason": "referee_verdict",
            "detail": "the referee ruled: ping wins the relay",
        },
        1_300,
    )
    report = render_report(REALM)
    assert (
        "## Ruling\n"
        "ping wins the relay — ruled by umpire\n"
        "- tied on points;\n"
        "  ping relayed first\n"
        "\n"
        "## Termination\n"
        "- kind: `referee_verdict`\n"
        "- evidence: the referee ruled: ping wins the relay\n"
    ) in report


def test_eliminations_say_who_when_and_why():
    build_realm(REALM)
    running(REALM, ts=10_000)
    event(REALM, Kind.TURN, {"round": 1, "current": "alice"}, 11_000)
    # the referee resolves a round after it completed: the elimination belongs to round 1
    event(REALM, Kind.TURN, {"event": "round_complete", "completed": 1, "round": 2}, 15_000)
    event(
        REALM,
        Kind.ELIMINATION,
        {"agent": None, "reason": "a tie: nobody goes", "issued_by": "judge"},
        20_000,
    )
    event(REALM, Kind.TURN, {"round": 2, "current": "alice"}, 40_000)
    event(
        REALM,
        Kind.ELIMINATION,
        {"agent": "carol", "reason": "fewest votes", "issued_by": "judge"},
        3_742_000,
    )
    event(REALM, Kind.ELIMINATION, {"agent": "dave", "reason": "left"}, 3_800_000)
    report = render_report(REALM)
    assert (
        "## Eliminations\n"
        "- nobody (round 1, +0:10): a tie: nobody goes — by judge\n"
        "- carol (round 2, +1:02:12): fewest votes — by judge\n"
        "- dave (round 2, +1:03:10): left\n"
    ) in report


def test_a_failed_realm_reports_its_failure_as_the_termination():
    build_realm(REALM)
    event(REALM, Kind.LIFECYCLE, {"event": "provisioning"}, 1_000)
    event(REALM, Kind.LIFECYCLE, {"event": "failed", "detail": "sandbox ping: no bwrap"}, 1_100)
    report = render_report(REALM)
    assert "## Termination\n- kind: `failed`\n- evidence: sandbox ping: no bwrap\n" in report


def _key(agent: str, transport: str, provider: str) -> None:
    """What minting the agent's key chronicles (the ledger's row is not read)."""
    event(
        REALM,
        Kind.KEY,
        {
            "agent": agent,
            "provider": provider,
            "model": "m",
            "transport": transport,
        },
        1_050,
    )


def test_spend_on_the_scripted_provider_is_called_nominal():
    chronicle_a_duel(verdict=True)
    _key("alice", "scripted", "offline")
    _key("bob", "scripted", "offline")
    spend = render_report(REALM).split("## Spend\n", 1)[1]
    assert spend.startswith(
        "_Prices are nominal: every agent ran on the scripted provider (offline); "
        "no real money was spent._\n"
        "- alice: $0.0123\n"
    )


def test_a_mixed_realm_names_the_agents_whose_prices_are_nominal():
    chronicle_a_duel(verdict=True)
    _key("alice", "scripted", "offline")
    _key("bob", "openai", "azure")
    spend = render_report(REALM).split("## Spend\n", 1)[1]
    assert spend.startswith(
        "_Prices are nominal for alice: it ran on the scripted provider (offline); "
        "the rest is real spend._\n"
    )


def test_real_spend_carries_no_nominal_note():
    chronicle_a_duel(verdict=True)
    _key("alice", "openai", "azure")
    _key("bob", "litellm", "anthropic")
    assert "nominal" not in render_report(REALM)


def test_without_keys_the_chronicled_provider_decides():
    build_realm(REALM)
    running(REALM, ts=1_000, config={"provider": "offline"})
    event(REALM, Kind.SPEND, {"agent": "bob", "usd": 0.002}, 1_300)
    assert "_Prices are nominal: every agent ran on the scripted provider (offline)" in (
        render_report(REALM)
    )


def test_without_a_verdict_the_headline_says_how_the_realm_concluded():
    chronicle_a_duel(verdict=False)
    report = render_report(REALM)
    assert "**Concluded:** duration — time limit 1h reached\n" in report
    assert "**Outcome:**" not in report
    # a tally is never a verdict
    assert "bob" not in report.split("\n")[2]


def test_an_empty_realm_reports_no_spend_and_an_open_outcome():
    build_realm("quiet-abc123", name="Quiet")
    # the one event is the TOOL_MANIFEST every launch chronicles
    assert render_report("quiet-abc123") == (
        "# Quiet — final report\n"
        "\n"
        "**Outcome:** —\n"
        "\n"
        "## Spend\n"
        "- (no spend recorded)\n"
        "\n"
        "_0 messages, 1 events chronicled._\n"
    )


def test_a_realm_known_only_to_the_chronicle_is_titled_by_its_id():
    event("ghost-abc123", Kind.LIFECYCLE, {"event": "provisioning"}, 5)
    assert render_report("ghost-abc123").startswith("# Realm ghost-abc123 — final report\n")
