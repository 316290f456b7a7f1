"""Load-time rules of the state-machine declaration, each with its exact message."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from .helpers import base_agents, base_project, load, messages

M = "project.json: spec.mechanics[0].machine"


def machine() -> dict[str, Any]:
    return {
        "roles": {"dealer": {"members": "referee"}, "player": {"members": "participants"}},
        "states": ["waiting", "playing", "done"],
        "initial": "waiting",
        "terminal": ["done"],
        "actor": {"over": "player", "skip": ["out"]},
        "data": {
            "hole": {"visibility": "owner"},
            "pot": {"visibility": "public"},
            "secret": {"visibility": "referee"},
            "out": {"visibility": "public", "type": "set"},
            "acted": {"visibility": "public", "type": "set"},
        },
        "transitions": {
            "deal": {
                "from": "waiting",
                "to": "playing",
                "by": "dealer",
                "guard": [{"data_present": "pot"}],
                "effects": [{"reset": "acted"}, {"set_actor": "$args.first"}],
            },
            "check": {
                "from": ["playing"],
                "to": "same",
                "by": "player",
                "guard": ["caller_is_actor", {"caller_not_in": "acted"}],
                "effects": [{"add_to": {"key": "acted", "value": "$caller"}}, "advance_actor"],
            },
            "show": {
                "from": "playing",
                "to": "same",
                "by": "player",
                "effects": [{"reveal": {"key": "hole", "owners": "$caller"}}],
            },
            "finish": {
                "from": "any",
                "to": "done",
                "by": "dealer",
                "guard": [
                    {"members_count": {"over": "player", "minus": ["out"], "at_least": 1}},
                    {"data_set_full": {"key": "acted", "over": "player", "minus": ["out"]}},
                    {"escrow_complete": {"round": "$data.pot", "over": "player"}},
                ],
                "effects": [
                    {"reveal": {"key": "hole", "owners": {"over": "player", "minus": ["out"]}}},
                    {"set": {"key": "pot", "value": 0}},
                    {"unset": "pot"},
                ],
            },
        },
        "wake": [
            {"role": "actor"},
            {"role": "dealer", "when": [{"data_set_full": {"key": "acted", "over": "player"}}]},
            {"role": "dealer", "after_s": 240},
        ],
    }


def run(tmp_path, change=None, *, turns=False, agents=None, termination=True):
    declared = machine()
    if change is not None:
        change(declared)
    spec: dict[str, Any] = {"mechanics": [{"kind": "state-machine", "machine": declared}]}
    if turns:
        spec["turns"] = {}
    project = base_project(**spec)
    if termination:
        project["spec"]["termination"].append({"type": "machine_terminal"})
    return load(tmp_path, project=project, agents=agents)


def test_valid_machine_loads(tmp_path):
    result = run(tmp_path)
    assert result.ok, messages(result)
    assert result.project is not None and result.project.machine is not None
    assert result.project.machine.transitions["deal"].from_ == ["waiting"]


def t(name):
    return lambda m: m["transitions"][name]


CASES = [
    (
        "initial state",
        lambda m: m.update(initial="lobby"),
        [f'{M}.initial: expected a declared state (waiting, playing, done); got "lobby"'],
    ),
    (
        "terminal state",
        lambda m: m.update(terminal=["over"]),
        [f'{M}.terminal[0]: expected a declared state (waiting, playing, done); got "over"'],
    ),
    (
        "duplicate state",
        lambda m: m["states"].append("done"),
        [f'{M}.states[3]: expected each state declared once; got "done"'],
    ),
    (
        "from state",
        lambda m: t("deal")(m).update({"from": ["waiting", "lobby"]}),
        [
            f"{M}.transitions.deal.from[1]: expected a declared state (waiting, playing, "
            "done, any); "
            'got "lobby"'
        ],
    ),
    (
        "to state",
        lambda m: t("deal")(m).update(to="nowhere"),
        [
            f"{M}.transitions.deal.to: expected a declared state (waiting, playing, done, same); "
            'got "nowhere"'
        ],
    ),
    (
        "by role",
        lambda m: t("deal")(m).update(by="croupier"),
        [f'{M}.transitions.deal.by: expected a declared role (dealer, player); got "croupier"'],
    ),
    (
        "members must be roster ids",
        lambda m: m["roles"].update(team={"members": ["ping", "zed"]}),
        [
            f"{M}.roles.team.members[1]: expected an agent id of the roster (ping, pong, umpire); "
            'got "zed"'
        ],
    ),
    (
        "members shape",
        lambda m: m["roles"].update(team={"members": "everyone"}),
        [
            f'{M}.roles.team.members: expected "referee", "participants" or a list of agent ids; '
            'got "everyone"'
        ],
    ),
    (
        "data visibility enum",
        lambda m: m["data"].update(x={"visibility": "team"}),
        [f'{M}.data.x.visibility: expected one of public, owner, referee; got "team"'],
    ),
    (
        "owner key cannot be a set",
        lambda m: m["data"].update(x={"visibility": "owner", "type": "set"}),
        [f'{M}.data.x.type: expected value (an owner-visibility key is per agent); got "set"'],
    ),
    (
        "actor is reserved",
        lambda m: m["data"].update(actor={"visibility": "public"}),
        [f"{M}.data.actor: actor is reserved for the actor pointer"],
    ),
    (
        "actor.over",
        lambda m: m["actor"].update(over="seat"),
        [f'{M}.actor.over: expected a declared role (dealer, player); got "seat"'],
    ),
    (
        "actor.skip",
        lambda m: m["actor"].update(skip=["pot"]),
        [f'{M}.actor.skip[0]: expected a declared set key (out, acted); got "pot"'],
    ),
    (
        "unknown guard",
        lambda m: t("deal")(m).update(guard=["always"]),
        [
            f"{M}.transitions.deal.guard[0]: expected a guard (caller_is_actor, caller_in, "
            "caller_not_in, data_equals, data_present, data_set_empty, members_count, "
            "data_set_full, "
            'escrow_complete); got "always"'
        ],
    ),
    (
        "clause shape",
        lambda m: t("deal")(m).update(guard=[{"a": 1, "b": 2}]),
        [
            f"{M}.transitions.deal.guard[0]: expected a clause name or an object with exactly one "
            "key; got an object"
        ],
    ),
    (
        "unknown effect",
        lambda m: t("deal")(m).update(effects=["shuffle"]),
        [
            f"{M}.transitions.deal.effects[0]: expected an effect (advance_actor, add_to, "
            'remove_from, reset, set, unset, set_actor, reveal); got "shuffle"'
        ],
    ),
    (
        "guard key undeclared",
        lambda m: t("deal")(m).update(guard=[{"data_present": "deck"}]),
        [
            f"{M}.transitions.deal.guard[0].data_present: expected a declared data key (hole, pot, "
            'secret, out, acted, actor); got "deck"'
        ],
    ),
    (
        "caller_in needs a set",
        lambda m: t("check")(m).update(guard=[{"caller_in": "pot"}]),
        [
            f"{M}.transitions.check.guard[0].caller_in: expected a declared set key (out, acted); "
            'got "pot"'
        ],
    ),
    (
        "bare guard needs an argument",
        lambda m: t("deal")(m).update(guard=["data_present"]),
        [f"{M}.transitions.deal.guard[0]: guard data_present needs an argument"],
    ),
    (
        "data_equals fields",
        lambda m: t("deal")(m).update(guard=[{"data_equals": {"key": "pot", "val": 1}}]),
        [
            f"{M}.transitions.deal.guard[0].data_equals.val: unknown field",
            f"{M}.transitions.deal.guard[0].data_equals.value: required field missing",
        ],
    ),
    (
        "members_count bound literal",
        lambda m: t("finish")(m)["guard"].__setitem__(
            0, {"members_count": {"over": "player", "at_least": "$args.n"}}
        ),
        [
            f"{M}.transitions.finish.guard[0].members_count.at_least: expected a literal whole "
            'number ≥ 0; got "$args.n"'
        ],
    ),
    (
        "members_count needs one bound",
        lambda m: t("finish")(m)["guard"].__setitem__(0, {"members_count": {"over": "player"}}),
        [
            f"{M}.transitions.finish.guard[0].members_count: give exactly one of equals, at_most, "
            "at_least"
        ],
    ),
    (
        "minus must be set keys",
        lambda m: t("finish")(m)["guard"].__setitem__(
            1, {"data_set_full": {"key": "acted", "over": "player", "minus": ["pot"]}}
        ),
        [
            f"{M}.transitions.finish.guard[1].data_set_full.minus[0]: expected a declared set key "
            '(out, acted); got "pot"'
        ],
    ),
    (
        "escrow_complete over",
        lambda m: t("finish")(m)["guard"].__setitem__(
            2, {"escrow_complete": {"round": "R1", "over": "crowd"}}
        ),
        [
            f"{M}.transitions.finish.guard[2].escrow_complete.over: expected a declared role "
            '(dealer, player); got "crowd"'
        ],
    ),
    (
        "value expression",
        lambda m: t("deal")(m).update(effects=[{"set_actor": "$who"}]),
        [
            f"{M}.transitions.deal.effects[0].set_actor: expected a literal, $caller, $args.<name> "
            'or $data.<key>; got "$who"'
        ],
    ),
    (
        "$data key",
        lambda m: t("finish")(m)["effects"].__setitem__(
            1, {"set": {"key": "pot", "value": "$data.deck"}}
        ),
        [
            f"{M}.transitions.finish.effects[1].set.value: expected a declared data key "
            "(hole, pot, "
            'secret, out, acted, actor); got "deck"'
        ],
    ),
    (
        "reset needs a set",
        lambda m: t("deal")(m)["effects"].__setitem__(0, {"reset": "pot"}),
        [
            f"{M}.transitions.deal.effects[0].reset: expected a declared set key (out, acted); "
            'got "pot"'
        ],
    ),
    (
        "unset not on sets",
        lambda m: t("finish")(m)["effects"].__setitem__(2, {"unset": "out"}),
        [
            f"{M}.transitions.finish.effects[2].unset: expected a value key (use reset for a set); "
            'got "out"'
        ],
    ),
    (
        "set not on owner keys",
        lambda m: t("finish")(m)["effects"].__setitem__(1, {"set": {"key": "hole", "value": 1}}),
        [
            f"{M}.transitions.finish.effects[1].set.key: expected a key that is not owner-visible "
            '(owner values are written with game_set); got "hole"'
        ],
    ),
    (
        "reveal needs an owner key",
        lambda m: t("show")(m).update(effects=[{"reveal": {"key": "pot", "owners": "$caller"}}]),
        [
            f"{M}.transitions.show.effects[0].reveal.key: expected an owner-visibility key (hole); "
            'got "pot"'
        ],
    ),
    (
        "advance_actor needs a pointer",
        lambda m: (m.pop("actor"), m.update(wake=[])),
        [
            f"{M}.transitions.deal.effects[1].set_actor: set_actor needs an actor pointer "
            "(machine.actor)",
            f"{M}.transitions.check.guard[0]: caller_is_actor needs an actor pointer "
            "(machine.actor)",
            f"{M}.transitions.check.effects[1]: advance_actor needs an actor pointer "
            "(machine.actor)",
        ],
    ),
    (
        "participants may not reset",
        lambda m: t("check")(m)["effects"].append({"reset": "acted"}),
        [
            f"{M}.transitions.check.effects[2].reset: a participant role may not use reset unless "
            "participant_effects lists it"
        ],
    ),
    (
        "participant_effects opt in",
        lambda m: (
            t("check")(m)["effects"].append({"reset": "acted"}),
            m.update(participant_effects=["reset"]),
        ),
        [],
    ),
    (
        "participant_effects names",
        lambda m: m.update(participant_effects=["teleport"]),
        [
            f"{M}.participant_effects[0]: expected an effect (advance_actor, add_to, remove_from, "
            'reset, set, unset, set_actor, reveal); got "teleport"'
        ],
    ),
    (
        "participants add only themselves",
        lambda m: t("check")(m)["effects"].__setitem__(
            0, {"add_to": {"key": "acted", "value": "$args.who"}}
        ),
        [
            f"{M}.transitions.check.effects[0].add_to.value: expected $caller (a participant role "
            'may only add itself unless participant_effects lists add_to); got "$args.who"'
        ],
    ),
    (
        "participants reveal only themselves",
        lambda m: t("show")(m).update(
            effects=[{"reveal": {"key": "hole", "owners": {"over": "player"}}}]
        ),
        [
            f"{M}.transitions.show.effects[0].reveal.owners: expected $caller (a participant role "
            "may only reveal its own value unless participant_effects lists reveal); got an object"
        ],
    ),
    (
        "hidden role needs referee log",
        lambda m: (
            m["roles"].update(mole={"members": ["ping"], "visibility": "hidden"}),
            m["transitions"].update(sab={"from": "playing", "to": "same", "by": "mole"}),
        ),
        [f'{M}.transitions.sab.log: expected referee (the role mole is hidden); got "public"'],
    ),
    (
        "public log may not read referee keys",
        lambda m: m["data"].update(acted={"visibility": "referee", "type": "set"}),
        [
            f"{M}.transitions.check.guard[1].caller_not_in: a public-log transition may not "
            "read the "
            "referee-only key acted (set log: referee, or make the key public)",
            f"{M}.transitions.finish.guard[1].data_set_full: a public-log transition may not read "
            "the referee-only key acted (set log: referee, or make the key public)",
        ],
    ),
    (
        "referee log may read referee keys",
        lambda m: (
            m["data"].update(acted={"visibility": "referee", "type": "set"}),
            t("check")(m).update(log="referee"),
            t("finish")(m).update(log="referee"),
        ),
        [],
    ),
    (
        "wake role",
        lambda m: m["wake"].append({"role": "crowd", "after_s": 300}),
        [f'{M}.wake[3].role: expected a declared role (dealer, player); got "crowd"'],
    ),
    (
        "wake hidden role",
        lambda m: (
            m["roles"].update(mole={"members": ["ping"], "visibility": "hidden"}),
            m["wake"].append({"role": "mole", "after_s": 300}),
        ),
        [f'{M}.wake[3].role: expected a public role (hidden roles cannot be woken); got "mole"'],
    ),
    (
        "only actor may be bare",
        lambda m: m["wake"].append({"role": "dealer"}),
        [f"{M}.wake[3]: a wake rule for dealer needs when or after_s (only actor may be bare)"],
    ),
    (
        "actor may not use after_s",
        lambda m: m["wake"][0].update(after_s=300),
        [f"{M}.wake[0].after_s: actor cannot take after_s; nudge a declared role instead"],
    ),
    (
        "after_s floor",
        lambda m: m["wake"][2].update(after_s=60),
        [f"{M}.wake[2].after_s: expected at least 240 seconds; got 60"],
    ),
    (
        "wake has no caller",
        lambda m: m["wake"][1].update(when=["caller_is_actor"]),
        [
            f"{M}.wake[1].when[0]: expected a guard that does not read the caller (a wake rule has "
            'no caller); got "caller_is_actor"'
        ],
    ),
    ("machine key shape", lambda m: m.update(clock=5), [f"{M}.clock: unknown field"]),
]


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_machine_rule(tmp_path, change, expected):
    assert messages(run(tmp_path, change)) == expected


def test_wake_rules_and_turns_are_refused_together(tmp_path):
    assert messages(run(tmp_path, turns=True)) == [
        f"{M}.wake: wake rules and a turns block cannot be used together (use turns: null)"
    ]


def test_referee_role_needs_a_referee(tmp_path):
    agents = copy.deepcopy(base_agents())
    del agents["umpire"]
    assert messages(run(tmp_path, agents=agents)) == [
        f"{M}.roles.dealer.members: the roster has no referee"
    ]


def test_at_most_one_machine(tmp_path):
    project = base_project(
        mechanics=[
            {"kind": "state-machine", "machine": machine()},
            {"kind": "state-machine", "machine": machine()},
        ]
    )
    assert messages(load(tmp_path, project=project)) == [
        "project.json: spec.mechanics[1].kind: a project declares at most one state-machine"
    ]


def test_machine_only_on_state_machine_and_ruleset_only_on_sealed(tmp_path):
    project = base_project(
        mechanics=[
            {"kind": "sealed-submit", "machine": machine()},
            {"kind": "state-machine", "ruleset": "dominance", "machine": machine()},
        ]
    )
    assert messages(load(tmp_path, project=project)) == [
        "project.json: spec.mechanics[0].machine: only a state-machine mechanic takes a machine",
        "project.json: spec.mechanics[1].ruleset: only a sealed-submit mechanic takes a ruleset",
    ]
