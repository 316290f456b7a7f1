"""The state machine: hidden owner data, a hidden role, wakes, and ``machine_terminal``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_mechanics_run import assert_clean_ending, run_realm

pytestmark = [pytest.mark.slow, pytest.mark.timeout(150)]


def test_machine_wakes_its_actors_hides_owner_data_and_ends_terminal(tmp_path: Path) -> None:
    run = run_realm(tmp_path, "vault")
    assert_clean_ending(run, "machine_terminal")
    chron = run.chron

    # The declaration is chronicled before provisioning, hidden memberships included.
    kinds = [k for _i, k, _p in chron.events]
    assert kinds.index("machine") < kinds.index("lifecycle")
    (machine,) = chron.kinds("machine")
    assert machine["members"]["mole"] == ["gus"] and machine["referee"] == "keeper"
    assert chron.kinds("lifecycle")[1]["config"]["referee_sees_all"] is False

    games = [
        (g["op"], g.get("transition") or g.get("key"), g["caller"], g.get("wake"))
        for g in chron.kinds("game")
    ]
    assert games == [
        ("set", "secret", "keeper", []),
        ("set", "secret", "keeper", []),
        ("set", "clue", "keeper", []),
        ("act", "begin", "keeper", ["fay"]),
        ("reject", "open", "fay", None),
        ("act", "guess", "fay", ["gus"]),
        ("act", "snoop", "gus", []),
        ("act", "guess", "gus", ["fay"]),
        # Only once a secret is shown does the keeper's wake rule turn true.
        ("act", "show", "fay", ["keeper"]),
        ("act", "open", "keeper", []),
    ]
    game = chron.kinds("game")
    assert game[4]["check"] == "by"
    assert [(g["owner"], g["value"]) for g in game[:2]] == [("fay", "amber"), ("gus", "jade")]
    assert game[6]["log"] == "referee"  # the hidden role's act stays off the public log
    assert (game[-1]["from"], game[-1]["to"]) == ("guessing", "opened")

    # The Warden posted each wake to the Commons, in order, mentioning only the woken.
    wakes = [b.split(" ", 1)[1] for b in run.system_posts() if "machine is waiting" in b]
    assert wakes == [
        f"@{agent} — the machine is waiting on you. Call game_state."
        for agent in ("fay", "gus", "fay", "keeper")
    ]

    # What each player's own view showed it: its own secret only, never the other's,
    # never the referee-only clue.
    assert run.said("fay")[0] == "fay sees secret={'fay': 'amber'} clue= actor=gus"
    assert run.said("gus") == ["gus sees secret={'gus': 'jade'} guesses=['fay', 'gus']"]
    (concluding,) = [p for p in chron.kinds("lifecycle") if p["event"] == "concluding"]
    assert concluding["detail"] == "the state machine reached opened"

    # The keeper may read the Commons, but only through table_talk: it is not in the
    # feed, so every wake it had was a system post (the kickoff and its machine cue),
    # never a player's message, and what it read there included the players' posts.
    senders = {eid: who for who, _body, eid in chron.messages}
    woke_on = [
        eid
        for t in chron.kinds("trace")
        if t["agent_id"] == "keeper" and t["type"] == "wake"
        for eid in t["data"]["events"]
    ]
    assert len(woke_on) >= 2, woke_on
    assert [senders.get(eid, "unmirrored") or "" for eid in woke_on] == [""] * len(woke_on)
    (note,) = [n["text"] for n in chron.kinds("note") if n["agent"] == "keeper"]
    assert note.startswith("the floor: ") and "fay" in note.split(), note
