"""The state-machine engine on its own: guards, effects, authority, visibility, wakes."""

from __future__ import annotations

import json

import pytest

from realms.packages.schema.machine import MachineDef
from realms.realmtools.machine.engine import Machine, Rejected
from tests.fixtures.compat import COMPAT

from .machines import AUCTION, AUCTION_WITH_CHEAT

ROSTER = ["orin", "vela", "zed", "themis"]


def _machine(decl=AUCTION):
    return Machine(MachineDef.model_validate(decl), ROSTER, "themis")


def _no_escrow(label):
    return frozenset()


def _act(m, state, name, caller, **args):
    return m.act(state, name, caller, args, _no_escrow, now=1000)


def _started(m):
    s = m.initial_state()
    m.apply_set(s, "lot", "vase", None)
    return _act(m, s, "start", "themis", first="vela")


def test_roles_resolve_in_roster_order():
    m = _machine()
    assert m.members("bidder") == ("orin", "vela", "zed")
    assert m.members("host") == ("themis",)
    assert m.members("spy") == ("zed",)


def test_each_rejection_names_its_check():
    m = _machine()
    s = m.initial_state()
    cases = [
        ("nope", "themis", {}, "exists"),
        ("bid", "orin", {}, "from"),
        ("start", "orin", {"first": "orin"}, "by"),
        ("start", "themis", {"first": "orin"}, "guards"),  # lot not present
    ]
    for name, caller, args, check in cases:
        with pytest.raises(Rejected) as err:
            m.act(s, name, caller, args, _no_escrow, now=1)
        assert err.value.check == check, name
    m.apply_set(s, "lot", "vase", None)
    with pytest.raises(Rejected, match="missing argument 'first'") as err:
        _act(m, s, "start", "themis")
    assert err.value.check == "effect"
    with pytest.raises(Rejected, match="not one of") as err:
        _act(m, s, "start", "themis", first="themis")  # set_actor refuses strangers


def test_the_actor_pointer_advances_and_skips():
    m = _machine()
    s = _started(m)
    assert (s.state, s.actor, s.actor_since) == ("bidding", "vela", 1000)
    with pytest.raises(Rejected) as err:
        _act(m, s, "bid", "orin")
    assert err.value.check == "guards"
    s = _act(m, s, "pass", "vela")
    assert (s.actor, s.sets["passed"]) == ("zed", ["vela"])
    s = _act(m, s, "bid", "zed")
    assert s.actor == "orin"  # wrapped
    s = _act(m, s, "bid", "orin")
    assert s.actor == "zed"  # vela is skipped
    s = _act(m, s, "pass", "zed")
    assert s.actor == "orin"
    s = _act(m, s, "pass", "orin")
    assert s.actor is None  # everyone skipped: parked
    assert s.sets["bids_in"] == ["zed", "orin"]


def test_participant_roles_may_not_use_referee_effects():
    m = _machine(AUCTION_WITH_CHEAT)
    s = _started(m)
    with pytest.raises(Rejected, match="participant_effects") as err:
        _act(m, s, "cheat", "vela")
    assert err.value.check == "effect"
    opted_in = json.loads(json.dumps(AUCTION_WITH_CHEAT))
    opted_in["participant_effects"] = ["set"]
    m2 = _machine(opted_in)
    assert _act(m2, _started(m2), "cheat", "vela").values["lot"] == "free"


def test_owner_data_is_seen_by_its_owner_the_referee_and_after_a_reveal():
    m = _machine()
    s = _started(m)
    for owner, card in (("orin", "Ah"), ("vela", "Kd"), ("zed", "2c")):
        m.apply_set(s, "hand", card, owner)
    m.apply_set(s, "reserve", 90, None)
    assert m.visible_data(s, "orin")["hand"] == {"orin": "Ah"}
    assert "reserve" not in m.visible_data(s, "orin")
    assert m.visible_data(s, "themis")["hand"] == {"orin": "Ah", "vela": "Kd", "zed": "2c"}
    assert m.visible_data(s, "themis")["reserve"] == 90
    s = _act(m, s, "show", "vela")
    assert m.visible_data(s, "orin")["hand"] == {"orin": "Ah", "vela": "Kd"}
    with pytest.raises(Rejected, match="owner key"):
        m.apply_set(s, "hand", "3s", None)


def test_wakes_fire_on_edges_only():
    m = _machine()
    s0 = m.initial_state()
    m.apply_set(s0, "lot", "vase", None)
    s1 = _act(m, s0, "start", "themis", first="orin")
    assert m.wakes(s0, s1, "themis", {}, _no_escrow) == ["orin"]
    s2 = _act(m, s1, "pass", "orin")
    assert m.wakes(s1, s2, "orin", {}, _no_escrow) == ["vela"]
    s3 = _act(m, s2, "pass", "vela")
    # one bidder left: the host's rule becomes true, and zed is the new actor
    assert m.wakes(s2, s3, "vela", {}, _no_escrow) == ["zed", "themis"]
    s4 = _act(m, s3, "bid", "zed")
    # the actor stays zed (everyone else passed) and the host's rule was already true
    assert m.wakes(s3, s4, "zed", {}, _no_escrow) == []


def test_hidden_memberships_are_stripped_for_everyone_but_the_referee():
    m = _machine()
    seen = m.declaration_for("orin")
    assert seen["machine"]["roles"]["spy"]["members"] == "hidden"
    assert seen["members"]["spy"] == []
    assert m.declaration_for("themis")["members"]["spy"] == ["zed"]


@pytest.mark.compat
def test_the_compat_poker_table_declaration_runs():
    project = json.loads((COMPAT / "poker-table" / "project.json").read_text())
    decl = project["spec"]["mechanics"][0]["machine"]
    seats = ["lyra", "mira", "nova", "orion", "rigel", "vega"]
    m = Machine(MachineDef.model_validate(decl), [*seats, "pitboss"], "pitboss")
    s = m.initial_state()
    m.apply_set(s, "seed_commit", "abc123", None)
    s = m.act(s, "deal", "pitboss", {"bet_level": "2", "first": "nova"}, _no_escrow, now=5)
    assert (s.state, s.actor) == ("preflop", "nova")
    s = m.act(s, "raise", "nova", {"to": "6"}, _no_escrow, now=6)
    assert (s.values["bet_level"], s.actor) == ("6", "orion")
    for seat in ("orion", "rigel", "vega", "lyra"):
        s = m.act(s, "fold", seat, {}, _no_escrow, now=7)
    assert s.actor == "mira"
    with pytest.raises(Rejected):
        m.act(s, "advance", "pitboss", {"first": "nova"}, _no_escrow, now=8)
    s = m.act(s, "call", "mira", {"to": "6"}, _no_escrow, now=9)
    assert s.actor is None
    s = m.act(s, "advance", "pitboss", {"first": "nova"}, _no_escrow, now=10)
    assert (s.state, s.actor, s.sets["acted"]) == ("flop", "nova", [])
