"""Scores, penalties, flags, elimination and the verdict."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from realms.models import Realm

pytestmark = pytest.mark.timeout(60)


def _events(realm, kind):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=kind)]


def test_score_penalize_flag_and_the_scoreboard(realms):
    realm = realms()
    ref, orin = realms.agent(realm, "themis"), realms.agent(realm, "orin")
    assert ref.call("score", agent="@Orin!", delta=3, reason="won R1") == {
        "scoreboard": {"orin": 3.0, "vela": 0.0, "zed": 0.0}
    }
    assert (
        ref.call("penalize", agent="vela", amount=2.5, reason="named a card")["scoreboard"]["vela"]
        == -2.5
    )
    assert ref.call("flag", agent="zed", reason="spoke out of turn") == {
        "flagged": "zed",
        "reason": "spoke out of turn",
    }
    assert orin.call("scoreboard") == {"scoreboard": {"orin": 3.0, "vela": -2.5, "zed": 0.0}}
    assert _events(realm, Kind.SCORE) == [
        {"agent": "orin", "delta": 3.0, "reason": "won R1", "issued_by": "themis"},
        {"agent": "vela", "delta": -2.5, "reason": "penalty: named a card", "issued_by": "themis"},
    ]
    assert [p["agent"] for p in _events(realm, Kind.VIOLATION)] == ["vela", "zed"]
    # strangers are refused with the roster and nothing is recorded
    refused = ref.call("score", agent="mallory", delta=1, reason="x")
    assert "roster: orin, vela, zed" in refused["error"]
    assert "only the referee" in orin.call("score", agent="orin", delta=5, reason="me")["error"]
    assert len(_events(realm, Kind.SCORE)) == 2


def test_eliminate_normalises_names_and_knows_the_nobody_words(realms):
    realm = realms()
    ref = realms.agent(realm, "themis")
    for word in ("none", "Nobody", "n/a", "-"):
        assert ref.call("eliminate", agent=word, reason="tie vote")["eliminated"] is None
    assert "roster" in ref.call("eliminate", agent="mallory", reason="x")["error"]
    assert "roster" in ref.call("eliminate", agent="themis", reason="x")["error"]
    out = ref.call("eliminate", agent=" Vela. ", reason="voted out")
    assert out["eliminated"] == "vela"
    assert "already eliminated" in ref.call("eliminate", agent="vela", reason="again")["error"]
    events = _events(realm, Kind.ELIMINATION)
    assert [e["agent"] for e in events] == [None, None, None, None, "vela"]
    assert events[-1] == {"agent": "vela", "reason": "voted out", "issued_by": "themis"}

    # an eliminated agent may still read but no longer act
    vela = realms.agent(realm, "vela")
    assert "scoreboard" in vela.call("scoreboard")
    assert "eliminated" in vela.call("remember", note="still here?")
    assert "eliminated" in vela.call("submit_sealed", round="R1", payload="x")
    assert _events(realm, Kind.NOTE) == []


def test_rule_waits_for_min_rounds_and_a_final_verdict_stands(realms):
    realm = realms(spec={"turns": {"min_rounds_before_verdict": 2}})
    ref = realms.agent(realm, "themis")
    assert "too early" in ref.call("rule", outcome="orin wins", reasons="x")["error"]
    record_event(realm.realm_id, Kind.TURN, {"round": 2, "order": ["orin"], "position": 0})
    assert "too early" in ref.call("rule", outcome="orin wins", reasons="x")["error"]
    record_event(
        realm.realm_id,
        Kind.TURN,
        {"event": "round_complete", "completed": 2, "round": 3, "order": ["orin"]},
    )
    ref.call("score", agent="orin", delta=1, reason="r2")
    verdict = ref.call("rule", outcome="orin wins", reasons=["best of three"])
    assert verdict == {"outcome": "orin wins", "scoreboard": {"orin": 1.0, "vela": 0.0, "zed": 0.0}}
    again = ref.call("rule", outcome="vela wins", reasons="changed my mind")
    assert "already stands" in again["error"]
    assert again["outcome"] == "orin wins"
    assert _events(realm, Kind.VERDICT) == [
        {
            "outcome": "orin wins",
            "reasons": ["best of three"],
            "scoreboard": {"orin": 1.0, "vela": 0.0, "zed": 0.0},
            "issued_by": "themis",
            "final": True,
        }
    ]


def test_a_realm_that_is_not_running_refuses_acts_but_answers_reads(realms):
    realm = realms(state=Realm.State.ARCHIVED)
    ref = realms.agent(realm, "themis")
    assert "not running" in ref.call("score", agent="orin", delta=1, reason="late")["error"]
    assert ref.call("scoreboard") == {"scoreboard": {"orin": 0.0, "vela": 0.0, "zed": 0.0}}
    assert _events(realm, Kind.SCORE) == []
