"""Sealed submit, reveal and tally through the MCP server."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event

pytestmark = pytest.mark.timeout(60)


def _events(realm, kind):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=kind)]


def test_sealed_round_is_hidden_until_revealed_then_tallied(realms):
    realm = realms()
    orin, vela, ref = (realms.agent(realm, a) for a in ("orin", "vela", "themis"))

    assert orin.call("submit_sealed", round="R1", payload="rock").startswith("Sealed for round R1")
    assert vela.call("submit_sealed", round="R1", payload="Scissors")

    status = ref.call("reveal_status", round="R1")
    assert status == {"submitted": ["orin", "vela"], "pending": ["zed"], "revealed": False}
    sealed = _events(realm, Kind.SEALED_SUBMIT)
    assert [p["agent"] for p in sealed] == ["orin", "vela"]
    assert all("rock" not in p["sealed"] and "Scissors" not in p["sealed"] for p in sealed)

    outcome = ref.call(
        "tally",
        round="R1",
        ruleset="dominance",
        config={"beats": {"rock": ["scissors"], "scissors": ["paper"], "paper": ["rock"]}},
    )
    assert outcome["result"] == "orin"
    assert outcome["kind"] == "agent"
    assert _events(realm, Kind.REVEAL) == [
        {"round": "R1", "submissions": {"orin": "rock", "vela": "Scissors"}}
    ]
    assert _events(realm, Kind.TALLY)[0]["result"] == "orin"

    # a second reveal is refused; tally may re-use the revealed round
    again = ref.call("reveal", round="R1")
    assert "already revealed" in again["error"]
    assert ref.call("tally", round="R1", ruleset="plurality")["kind"] == "tie"
    assert len(_events(realm, Kind.REVEAL)) == 1


def test_submission_refusals_change_nothing(realms):
    realm = realms()
    orin, ref = realms.agent(realm, "orin"), realms.agent(realm, "themis")

    assert orin.call("submit_sealed", round="R2", payload="7").startswith("Sealed")
    assert "already submitted" in orin.call("submit_sealed", round="R2", payload="9")
    assert orin.call("submit_sealed", round="R2 ", payload="9").startswith("Sealed")  # exact labels
    assert "empty" in orin.call("submit_sealed", round="R3", payload="  ")
    # the referee does not even see submit_sealed, and is refused when it calls it
    assert "submit_sealed" not in ref.tools()
    assert ref.call("submit_sealed", round="R2", payload="1").startswith("error:")
    assert ref.call("reveal", round="R2") == {"orin": "7"}
    assert "already revealed" in realms.agent(realm, "vela").call(
        "submit_sealed", round="R2", payload="3"
    )
    assert len(_events(realm, Kind.SEALED_SUBMIT)) == 2


def test_players_cannot_reveal_or_tally(realms):
    realm = realms()
    orin = realms.agent(realm, "orin")
    orin.call("submit_sealed", round="R1", payload="x")
    assert "only the referee" in orin.call("reveal", round="R1")["error"]
    assert "only the referee" in orin.call("tally", round="R1", ruleset="plurality")["error"]
    assert _events(realm, Kind.REVEAL) == []


def test_tally_errors_leave_the_round_sealed(realms):
    realm = realms()
    ref = realms.agent(realm, "themis")
    realms.agent(realm, "orin").call("submit_sealed", round="B1", payload="ten")
    realms.agent(realm, "vela").call("submit_sealed", round="B1", payload="12")
    bad = ref.call("tally", round="B1", ruleset="high-bid")
    assert "not an integer" in bad["error"]
    unknown = ref.call("tally", round="B1", ruleset="loudest")
    assert "unknown ruleset" in unknown["error"]
    assert _events(realm, Kind.REVEAL) == []
    assert _events(realm, Kind.TALLY) == []
