"""Integrity findings from a finished realm's Chronicle, in the report and in pit_status."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from chronicle.integrity import Finding, findings
from chronicle.kinds import Kind
from chronicle.report import render_report
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

REALM = "duel-abc123"
ROSTER = [
    {"id": "alice", "role": "participant"},
    {"id": "bob", "role": "participant"},
    {"id": "judge", "role": "referee"},
]


def play(
    *,
    moves: list[tuple[str, str]],
    verdict: bool = True,
    require_mention: bool = True,
    rounds: list[int] | None = None,
    finished: bool = True,
) -> None:
    """A duel: the moves at 2_000 + 100·i, a round closing after each pair of moves (or at
    the times in ``rounds``), a verdict, then the conclusion."""
    build_realm(REALM)
    config: dict[str, Any] = {
        "referee": "judge",
        "require_mention": require_mention,
        "agents": ROSTER,
    }
    running(REALM, ts=1_000, config=config)
    say(REALM, "Round 1: go", 1_500, agent="judge")
    for i, (agent, body) in enumerate(moves):
        say(REALM, body, 2_000 + 100 * i, agent=agent)
    closes = rounds if rounds is not None else [2_050 + 200 * n for n in range(len(moves) // 2)]
    for n, ts in enumerate(closes, start=1):
        event(REALM, Kind.TURN, {"event": "round_complete", "completed": n, "round": n + 1}, ts)
    if verdict:
        event(REALM, Kind.VERDICT, {"outcome": "alice wins", "issued_by": "judge"}, 9_000)
    if finished:
        event(REALM, Kind.LIFECYCLE, {"event": "concluding", "reason": "referee_verdict"}, 9_100)
        event(REALM, Kind.LIFECYCLE, {"event": "archived"}, 9_200)


def codes(found: list[Finding]) -> list[str]:
    return [f.code for f in found]


def status_lines() -> list[str]:
    out = StringIO()
    call_command("pit_status", REALM, stdout=out)
    return out.getvalue().splitlines()


def test_a_duel_played_as_written_has_no_findings() -> None:
    play(moves=[("alice", "rock"), ("bob", "paper"), ("alice", "scissors"), ("bob", "rock")])
    assert findings(REALM) == []
    assert "## Integrity" not in render_report(REALM)
    assert not any(line.startswith("integrity:") for line in status_lines())


def test_a_verdict_with_no_participant_message() -> None:
    play(moves=[], rounds=[])
    (finding,) = findings(REALM)
    assert finding == Finding(
        "verdict_without_play",
        "the referee ruled, but no participant wrote a message",
        {"participant_messages": 0, "participants": 2},
    )
    report = render_report(REALM)
    section = report.split("## Integrity\n", 1)[1].split("\n\n", 1)[0]
    assert section == (
        "- the referee ruled, but no participant wrote a message "
        "[verdict_without_play: participant_messages=0, participants=2]"
    )
    lines = status_lines()
    at = lines.index("integrity:")
    assert lines[at + 1 :] == [f"  {finding.line()}"]


def test_no_verdict_and_no_messages_is_not_that_finding() -> None:
    play(moves=[], rounds=[], verdict=False)
    assert findings(REALM) == []


def test_rounds_that_closed_in_silence() -> None:
    # Round 1 holds both moves; rounds 2 and 3 close with nobody speaking.
    play(moves=[("alice", "rock"), ("bob", "paper")], rounds=[2_150, 3_000, 4_000])
    (finding,) = findings(REALM)
    assert finding.code == "silent_rounds"
    assert finding.text == "rounds 2, 3 closed with no participant message"
    assert finding.evidence == {"silent_rounds": 2}


def test_a_single_silent_round_reads_in_the_singular() -> None:
    play(moves=[("alice", "rock"), ("bob", "paper")], rounds=[1_900, 2_150])
    (finding,) = findings(REALM)
    assert finding.text == "round 1 closed with no participant message"


def test_a_transcript_of_repeats() -> None:
    moves = [("alice", "rock"), ("bob", "rock")] + [("alice", "rock"), ("bob", " rock ")] * 2
    play(moves=moves, rounds=[])
    (finding,) = findings(REALM)
    assert finding.code == "mostly_repeats"
    assert finding.evidence == {"repeats": 5, "participant_messages": 6}
    assert finding.text == "5 of 6 participant messages repeat an earlier one exactly"


def test_half_repeats_is_not_mostly_repeats() -> None:
    moves = [("alice", "rock"), ("bob", "paper"), ("alice", "rock"), ("bob", "paper")]
    play(moves=moves, rounds=[])
    assert findings(REALM) == []


def test_a_referee_woken_by_every_message() -> None:
    moves = [("alice", "rock"), ("bob", "paper"), ("alice", "scissors"), ("bob", "rock")]
    play(moves=moves, require_mention=False)
    (finding,) = findings(REALM)
    assert finding.code == "referee_woken_by_all"
    assert finding.text == (
        "the referee judge was woken by every Commons message (require_mention is off)"
    )
    assert finding.evidence == {"commons_messages": 4}


def test_a_realm_still_running_has_no_findings_yet() -> None:
    play(moves=[], rounds=[], finished=False)
    assert findings(REALM) == []
