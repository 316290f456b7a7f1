"""examples/wreckers: hidden factions with a private channel, sealed daily ballots, eliminations."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import RealmRun, assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wreckers"
VILLAGERS = ("hollis", "ines", "jory", "kestrel", "lowen")
KEEPERS = ("hollis", "jory", "kestrel")
DAY_1 = {
    "hollis": "lowen",
    "ines": "kestrel",
    "jory": "lowen",
    "kestrel": "lowen",
    "lowen": "kestrel",
}
DAY_2 = {"hollis": "ines", "ines": "kestrel", "jory": "ines", "kestrel": "ines"}


def rooms(run: RealmRun) -> dict[str, list[tuple[str, str]]]:
    """Each channel's messages as ``(sender agent, body)``, in order."""
    db = sqlite3.connect(run.home / "bearpit.sqlite3")
    try:
        rows = db.execute(
            "SELECT channel, sender_agent, body FROM chronicle_message ORDER BY id"
        ).fetchall()
    finally:
        db.close()
    out: dict[str, list[tuple[str, str]]] = {}
    for channel, sender, body in rows:
        out.setdefault(channel, []).append((sender, body))
    return out


def ballots(votes: dict[str, str]) -> str:
    return ", ".join(f"{voter} → {choice}" for voter, choice in votes.items())


def test_wreckers_whisper_in_faction_and_are_voted_out_one_a_day(tmp_path: Path) -> None:
    run = run_realm(tmp_path, EXAMPLE, timeout=210)
    assert_clean_ending(run, "referee_verdict")
    chron = run.chron

    # Hidden factions: the only private room is the wreckers' own; no keeper has one.
    running = chron.kinds("lifecycle")[1]
    ((dm_room, label),) = running["side_channels"].items()
    assert label == "ines · lowen"

    # Every send_private is recorded, but only the partner's room carries any: the whisper
    # to hollis had no room, and the one to lowen after he was sent out was dropped with a
    # notice to ines.
    privates = [(p["from"], p["to"]) for p in chron.kinds("private")]
    assert privates == [("ines", "lowen"), ("ines", "hollis"), ("lowen", "ines"), ("ines", "lowen")]
    by_room = rooms(run)
    dm = [(who, body.split(" ", 1)[1]) for who, body in by_room[dm_room][1:]]
    assert dm == [
        (
            "ines",
            "@lowen I will say I was home asleep by ten. Tell them you were drinking at "
            "the Anchor all evening, and let us both put Kestrel in the frame: the Anchor is at "
            "the foot of the headland path.",
        ),
        ("lowen", "@ines Agreed: the Anchor for me, Kestrel for both of us."),
        ("", "lowen is out of the realm; private messages to them are no longer delivered."),
    ]
    assert set(by_room) == {dm_room, running["commons_room"]}
    everything = [body for room in by_room.values() for _who, body in room]
    assert not [b for b in everything if "carrying a lantern" in b or "come for me next" in b]
    assert not [b for b in everything if b.startswith("🔇")]

    # Two days of a talk round and a ballot round; lowen is gone from day 2's rotation.
    grants = [(t["round"], t["current"]) for t in run.turns()]
    two_days = [(r, v) for r in (1, 2) for v in VILLAGERS] + [
        (r, v) for r in (3, 4) for v in ("hollis", "ines", "jory", "kestrel")
    ]
    # An elimination reopens the floor (format §3.3): a tick that falls between ines's
    # elimination and the verdict hands round 5 to hollis just before the realm ends.
    assert grants in (two_days, [*two_days, (5, "hollis")])
    assert [t["completed"] for t in run.turns("round_complete")] == [1, 2, 3, 4]
    seals = [(s["round"], s["agent"]) for s in chron.kinds("sealed_submit")]
    assert seals == [("day-1", v) for v in DAY_1] + [("day-2", v) for v in DAY_2]
    assert [r["submissions"] for r in chron.kinds("reveal")] == [DAY_1, DAY_2]
    tallies = [(t["round"], t["ruleset"], t["kind"], t["result"]) for t in chron.kinds("tally")]
    assert tallies == [
        ("day-1", "plurality", "option", "lowen"),
        ("day-2", "plurality", "option", "ines"),
    ]
    assert [t["detail"]["counts"] for t in chron.kinds("tally")] == [
        {"lowen": 3, "kestrel": 2},
        {"ines": 3, "kestrel": 1},
    ]

    # Each tally's result is who was eliminated; the sandbox stopped, the rotation dropped
    # them, and they said nothing after it.
    assert chron.kinds("elimination") == [
        {"agent": "lowen", "reason": "sent out by the day-1 ballot", "issued_by": "reeve"},
        {"agent": "ines", "reason": "sent out by the day-2 ballot", "issued_by": "reeve"},
    ]
    stopped = [s for s in chron.kinds("system") if s.get("event") == "agent_stopped"]
    assert stopped == [
        {"event": "agent_stopped", "agent": "lowen", "reason": "eliminated"},
        {"event": "agent_stopped", "agent": "ines", "reason": "eliminated"},
    ]
    assert [(t["agent"], t["round"]) for t in run.turns("removed")] == [("lowen", 3), ("ines", 5)]
    (lowen_out,) = run.event_ms("elimination", agent="lowen")
    assert run.message_ms("lowen") and max(run.message_ms("lowen")) < lowen_out
    assert len(run.said("lowen")) == 3

    # The reeve published every ballot as the reveal had it.
    reeve = run.said("reeve")
    assert f"The ballots: {ballots(DAY_1)}." in reeve[2] and "lowen was a wrecker" in reeve[2]
    assert reeve[-1].startswith("🏁") and f"The ballots: {ballots(DAY_2)}." in reeve[-1]

    # Both wreckers out: the keepers score and win, no earlier than the day-2 count.
    assert [(s["agent"], s["delta"]) for s in chron.kinds("score")] == [(k, 1.0) for k in KEEPERS]
    (verdict,) = chron.kinds("verdict")
    assert verdict["outcome"] == "the keepers win: both wreckers are out"
    assert verdict["issued_by"] == "reeve"
    assert verdict["scoreboard"] == {v: float(v in KEEPERS) for v in VILLAGERS}
    last_seal, tallied, out, scored, ruled = run.order(
        ("sealed_submit", {"round": "day-2", "agent": "kestrel"}),
        ("tally", {"round": "day-2"}),
        ("elimination", {"agent": "ines"}),
        ("score", {"agent": "kestrel"}),
        ("verdict", {}),
    )
    assert last_seal < tallied < out < scored < ruled
    rounds_before = [p["round"] for i, k, p in chron.events if k == "turn" and i < ruled]
    assert rounds_before[-1] == 5
