"""Private messages under factions, quotas and elimination; turns with skip and retire;
a reactive referee cued on every grant; a ``message`` termination."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def delivered(body: str) -> str:
    """A DM as delivered: the recipient's Matrix mention, then ``@<id> text``."""
    return body.split(" ", 1)[1] if body.startswith("@bp_") else body


def test_dms_turns_and_a_reactive_referee(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "whispers", timeout=150)
    assert_clean_ending(run, "message")
    chron = run.chron

    # Factions: a DM room for each permitted pair only.
    running = chron.kinds("lifecycle")[1]
    assert sorted(running["side_channels"].values()) == ["ann · ben", "cat · dan"]

    # Every send_private is recorded, permitted or not.
    privates = [(p["from"], p["to"], p["text"]) for p in chron.kinds("private")]
    assert privates == [
        ("ann", "ben", "meet at dawn"),
        ("ann", "ben", "bring the rope"),
        ("ann", "cat", "psst, cat"),
        ("ben", "ann", "dawn it is"),
        ("cat", "dan", "hello dan"),
        ("ann", "ben", "are you still there?"),
        ("ann", "ben", "ben, answer me"),
    ]
    # ...but only what the rules allow is delivered, as the sender, into the pair's room:
    # ann's quota of one per round, no room for ann and cat, nothing to the eliminated ben.
    dms = {
        agent: [delivered(b) for b in run.said(agent) if "@" in b]
        for agent in privates_from(privates)
    }
    assert dms == {
        "ann": ["@ben meet at dawn"],
        "ben": ["@ann dawn it is"],
        "cat": ["@dan hello dan"],
    }
    # ann whispers, then passes the floor: her whisper reaches ben before ben's grant.
    bodies = [body for _who, body, _eid in chron.messages]
    dawn = next(i for i, b in enumerate(bodies) if "@ben meet at dawn" in b)
    ben_up = next(i for i, b in enumerate(bodies) if "@ben — it is your turn (round 1)" in b)
    assert dawn < ben_up
    notices = [b for b in run.system_posts() if b.startswith(("🔇", "🚫"))]
    assert notices == [
        "🔇 ann has used this round's 1 private message(s); further ones this round are "
        "recorded but not delivered.",
        "🚫 ben is out of the realm; private messages to them are no longer delivered.",
    ]

    # Turns: dan stays silent, is skipped and retired after one miss; ben is eliminated by
    # the referee while dan holds the floor; round 2 runs with ann and cat only.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    assert grants[:4] == [(1, "ann"), (1, "ben"), (1, "cat"), (1, "dan")]
    assert grants[4:6] == [(2, "ann"), (2, "cat")]
    assert run.turns("skipped") == [{"event": "skipped", "agent": "dan", "round": 1}]
    assert run.turns("retired") == [{"event": "retired", "agent": "dan", "round": 1}]
    (removed,) = run.turns("removed")
    assert removed["agent"] == "ben" and removed["by"] == "referee"
    assert chron.kinds("elimination") == [
        {"agent": "ben", "reason": "talked too much", "issued_by": "moderator"}
    ]
    assert {"event": "agent_stopped", "agent": "ben", "reason": "eliminated"} in chron.kinds(
        "system"
    )
    dan_granted, eliminated, skipped, ann_again = run.order(
        ("turn", {"current": "dan"}),
        ("elimination", {"agent": "ben"}),
        ("turn", {"event": "skipped"}),
        ("turn", {"round": 2, "current": "ann"}),
    )
    assert dan_granted < eliminated < skipped < ann_again
    (round_one,) = [t for t in run.turns("round_complete") if t["completed"] == 1]
    assert round_one["order"] == ["ann", "cat"]

    # The referee was cued on every grant and never on a round (cue "turn").
    cues = [b for b in run.system_posts() if "@moderator It is now" in b]
    assert [c.split("@moderator ", 1)[1] for c in cues[:4]] == [
        "It is now ann's turn (round 1).",
        "It is now ben's turn (round 1).",
        "It is now cat's turn (round 1).",
        "It is now dan's turn (round 1).",
    ]
    assert not [b for b in run.system_posts() if "Round 1 is complete" in b]
    assert run.said("dan") == []
    assert run.said("moderator") == ["🏁 whispers closed"]
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "1 message(s) match 'whispers closed' (last from moderator)"


def privates_from(privates: list[tuple[str, str, str]]) -> list[str]:
    return sorted({sender for sender, _to, _text in privates})
