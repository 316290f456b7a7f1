"""Tally rulesets as pure functions."""

from __future__ import annotations

import pytest

from realms.realmtools import rulesets
from realms.realmtools.errors import Refusal

RPS = {"beats": {"rock": ["scissors"], "scissors": ["paper"], "paper": ["rock"]}}


def test_dominance_needs_a_token_that_beats_every_other():
    assert rulesets.tally("dominance", {"a": "Rock", "b": "scissors"}, RPS)["result"] == "a"
    assert rulesets.tally("dominance", {"a": "rock", "b": "rock"}, RPS)["kind"] == "tie"
    three = {"a": "rock", "b": "scissors", "c": "paper"}
    assert rulesets.tally("dominance", three, RPS)["kind"] == "tie"
    assert rulesets.tally("dominance", {"a": "lizard", "b": "rock"}, RPS)["kind"] == "tie"
    assert rulesets.tally("dominance", {"a": "lizard", "b": "paper"}, RPS)["kind"] == "tie"
    with pytest.raises(Refusal, match="beats"):
        rulesets.tally("dominance", {"a": "rock"}, {})


def test_bids_parse_integers_and_need_a_unique_extreme():
    bids = {"a": " 10", "b": "7", "c": "12"}
    assert rulesets.tally("high-bid", bids, {}) == {
        "result": "c",
        "kind": "agent",
        "detail": {"bids": {"a": 10, "b": 7, "c": 12}, "winning_bid": 12},
    }
    assert rulesets.tally("low-bid", bids, {})["result"] == "b"
    # The reference's referees read the price as detail.winning_bid, tie or not.
    assert rulesets.tally("low-bid", bids, {})["detail"]["winning_bid"] == 7
    assert rulesets.tally("high-bid", {"a": "5", "b": "5"}, {}) == {
        "result": None,
        "kind": "tie",
        "detail": {"bids": {"a": 5, "b": 5}, "winning_bid": 5, "tied": ["a", "b"]},
    }
    with pytest.raises(Refusal, match="not an integer"):
        rulesets.tally("low-bid", {"a": "5.5"}, {})


def test_plurality_majority_unanimous():
    votes = {"a": "x", "b": "x", "c": "y", "d": "z"}
    assert rulesets.tally("plurality", votes, {})["result"] == "x"
    assert rulesets.tally("majority", votes, {})["kind"] == "tie"  # 2 of 4 is not > 50%
    assert rulesets.tally("majority", {**votes, "e": "x"}, {})["result"] == "x"
    assert rulesets.tally("plurality", {"a": "x", "b": "y"}, {})["kind"] == "tie"
    assert rulesets.tally("unanimous", {"a": "x", "b": "x"}, {})["result"] == "x"
    assert rulesets.tally("unanimous", {"a": "x", "b": "y"}, {})["kind"] == "tie"


def test_custom_rulesets_register_under_their_prefix():
    def longest(subs, config):
        winner = max(subs, key=lambda agent: len(subs[agent]))
        return {"result": winner, "kind": "agent", "detail": {}}

    rulesets.register("longest", longest)
    try:
        assert "custom:longest" in rulesets.known()
        assert rulesets.tally("custom:longest", {"a": "hi", "b": "hello"}, {})["result"] == "b"
        with pytest.raises(Refusal, match="unknown ruleset"):
            rulesets.tally("longest", {"a": "x"}, {})
    finally:
        rulesets.unregister("longest")
    with pytest.raises(Refusal, match="unknown ruleset"):
        rulesets.tally("custom:longest", {"a": "x"}, {})
    with pytest.raises(ValueError):
        rulesets.register("a:b", longest)
