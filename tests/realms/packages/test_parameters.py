"""The ``${name,default,description}`` grammar, the scan, its errors, values and binding."""

from __future__ import annotations

import pytest

from realms.packages import (
    ParameterBindingError,
    bind_parameters,
    missing_parameters,
    parse_placeholders,
    resolve_parameter_values,
    substitute,
    validate_parameter_values,
)
from realms.packages.parameters import Placeholder

from .helpers import base_agents, base_project, load, messages


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${a}", [Placeholder("a", None, None)]),
        ("${a,1}", [Placeholder("a", "1", None)]),
        ("${a,1,Points to win}", [Placeholder("a", "1", "Points to win")]),
        ("${a,1,Points, before the bell}", [Placeholder("a", "1", "Points, before the bell")]),
        ("${a,,Only a description}", [Placeholder("a", None, "Only a description")]),
        ("${a,}", [Placeholder("a", None, None)]),
        (r"${a,x\,y,d}", [Placeholder("a", "x,y", "d")]),
        (r"${a,x\}y}", [Placeholder("a", "x}y", None)]),
        (r"${a,back\\slash}", [Placeholder("a", "back\\slash", None)]),
        ("$${a}", []),
        ("$${a} and ${b}", [Placeholder("b", None, None)]),
        ("${1bad} ${a b} ${} ${-x}", []),
        ("${ spaced , d }", [Placeholder("spaced", " d ", None)]),
        ("${_under_9}", [Placeholder("_under_9", None, None)]),
        ("no placeholders $ { } {a}", []),
        ("${unclosed", []),
    ],
)
def test_grammar(text, expected):
    assert parse_placeholders(text) == expected


@pytest.mark.parametrize(
    ("text", "values", "out"),
    [
        ("Win ${n,10} points", {"n": "25"}, "Win 25 points"),
        ("Win ${n,10} points", {}, "Win  points"),
        ("$${literal} ${x}", {"x": "X"}, "${literal} X"),
        ("${1bad} stays", {}, "${1bad} stays"),
        (r"${a,x\,y,desc, with comma}!", {"a": "A"}, "A!"),
        ("$$${a}", {"a": "A"}, "$${a}"),
    ],
)
def test_substitute(text, values, out):
    assert substitute(text, values) == out


def params_project(**extra):
    return base_project(
        goals=["Reach ${target,10,Points, to win} points", "Play as ${team}"],
        guidelines="Tone: ${tone,brisk}. Target again: ${target}.",
        **extra,
    )


def test_scan_orders_by_first_appearance_with_occurrences(tmp_path):
    agents = base_agents()
    agents["ping"]["persona"] = "I play for ${team} in ${city,,Where it happens}."
    result = load(
        tmp_path,
        project=params_project(),
        agents=agents,
        files={"resources/brief.md": "Target ${target}", "agents/pong/resources/own.md": "${x}"},
    )
    assert result.ok, messages(result)
    by_name = {p.name: p for p in result.parameters}
    assert [p.name for p in result.parameters] == ["target", "team", "tone", "city", "x"]
    assert by_name["target"].occurrences == [
        "spec.goals[0]",
        "spec.guidelines",
        "resources[brief.md]",
    ]
    assert by_name["team"].occurrences == ["spec.goals[1]", "agents.ping.persona"]
    assert by_name["x"].occurrences == ["agents.pong.resource_files[own.md]"]
    assert by_name["target"].default == "10"
    assert by_name["target"].description == "Points, to win"
    assert by_name["target"].origin == "inline"
    assert by_name["team"].required and by_name["city"].required
    assert by_name["city"].description == "Where it happens"


def test_manifest_layers_over_inline(tmp_path):
    project = params_project(
        parameters={
            "target": {"default": 25, "type": "int", "min": 1, "max": 100},
            "tone": {"description": "How they write", "choices": ["brisk", "formal"]},
            "team": {"default": "reds"},
        }
    )
    result = load(tmp_path, project=project)
    assert result.ok, messages(result)
    by_name = {p.name: p for p in result.parameters}
    assert by_name["target"].default == "25"
    assert by_name["target"].origin == "overridden"
    assert by_name["target"].description == "Points, to win"
    assert by_name["target"].description_origin == "inline"
    assert by_name["team"].origin == "manifest" and not by_name["team"].required
    assert by_name["tone"].origin == "inline"
    assert by_name["tone"].description_origin == "manifest"
    assert by_name["tone"].choices == ["brisk", "formal"]


def test_parameter_load_errors(tmp_path):
    project = base_project(
        goals=["${a,1}", "${a,2}", "${b,red}", "${c,x}"],
        parameters={
            "ghost": {"description": "never used"},
            "b": {"choices": ["green", "blue"]},
            "c": {"type": "int"},
        },
    )
    assert messages(load(tmp_path, project=project)) == [
        'project.json: spec.goals[1]: parameter a has two different inline defaults: "1" and '
        '"2"; give it one, or set it in spec.parameters',
        "project.json: spec.parameters.ghost: no scenario text uses ${ghost}; use it in the "
        "prose or remove the declaration",
        "project.json: spec.parameters.b: the default of parameter b: expected one of green, "
        'blue; got "red"',
        "project.json: spec.parameters.c: the default of parameter c: expected a whole number; "
        'got "x"',
    ]


def test_unknown_parameter_type(tmp_path):
    project = base_project(goals=["${a}"], parameters={"a": {"type": "integer"}})
    assert messages(load(tmp_path, project=project)) == [
        "project.json: spec.parameters.a.type: expected one of string, int, number, bool; "
        'got "integer"'
    ]


def test_parameters_never_fill_ids_or_patterns(tmp_path):
    project = base_project(
        termination=[{"type": "message", "pattern": "${x}", "match_mode": "regex"}],
        mechanics=[{"kind": "sealed-submit", "config": {"label": "${y}"}}],
    )
    agents = base_agents()
    agents["ping"]["name"] = "${z}"
    result = load(tmp_path, project=project, agents=agents)
    assert result.ok and result.parameters == []


def test_value_validation(tmp_path):
    project = params_project(
        parameters={
            "target": {"type": "int", "min": 1, "max": 100},
            "tone": {"choices": ["brisk", "formal"]},
            "team": {"type": "bool"},
        }
    )
    params = load(tmp_path, project=project).parameters
    assert (
        validate_parameter_values(params, {"target": "50", "tone": "formal", "team": "Yes"}) == []
    )
    assert validate_parameter_values(
        params,
        {"target": "2.5", "tone": "rude", "team": "maybe", "nope": "1"},
    ) == [
        'target: expected a whole number; got "2.5"',
        'tone: expected one of brisk, formal; got "rude"',
        'team: expected one of true, false, yes, no, 1, 0; got "maybe"',
        "nope: not a parameter of this scenario (parameters: target, team, tone)",
    ]
    assert validate_parameter_values(params, {"target": "0"}) == [
        'target: expected at least 1; got "0"'
    ]
    assert validate_parameter_values(params, {"target": "101"}) == [
        'target: expected at most 100; got "101"'
    ]
    assert validate_parameter_values(params, {"target": "ten"}) == [
        'target: expected a whole number; got "ten"'
    ]
    assert validate_parameter_values(params, {"target": ""}) == []


def test_resolution_and_missing(tmp_path):
    params = load(tmp_path, project=params_project()).parameters
    assert resolve_parameter_values(params, {"team": "", "tone": "formal"}) == {
        "target": "10",
        "team": "",
        "tone": "formal",
    }
    assert [p.name for p in missing_parameters(params, {})] == ["team"]
    assert missing_parameters(params, {"team": "reds"}) == []


def test_bind_fills_prose_only(tmp_path):
    agents = base_agents()
    agents["ping"]["persona"] = "Team ${team}. Literal $${team}."
    agents["umpire"]["rubric"] = "Score to ${target}."
    agents["pong"]["skills"] = [{"source": "local", "ref": "s"}]
    project = params_project(
        termination=[{"type": "message", "pattern": "${target}"}],
    )
    result = load(
        tmp_path,
        project=project,
        agents=agents,
        files={
            "resources/r.md": "Play to ${target}",
            "agents/pong/skills/s/SKILL.md": "Skill for ${team}",
        },
    )
    assert result.ok, messages(result)
    bound = bind_parameters(result.project, {"team": "reds"})  # type: ignore[arg-type]
    assert bound.spec.goals == ["Reach 10 points", "Play as reds"]
    assert bound.spec.guidelines == "Tone: brisk. Target again: 10."
    assert bound.agent("ping").persona == "Team reds. Literal ${team}."  # type: ignore[union-attr]
    assert bound.agent("umpire").rubric == "Score to 10."  # type: ignore[union-attr]
    assert bound.agent("ping").resource_files == {"r.md": "Play to 10"}  # type: ignore[union-attr]
    assert bound.project_resources == {"r.md": "Play to 10"}
    assert bound.agent("pong").local_skills == {"s": "Skill for reds"}  # type: ignore[union-attr]
    assert bound.spec.termination[0].pattern == "${target}"
    assert result.project.spec.goals[1] == "Play as ${team}"  # type: ignore[union-attr]
    assert bind_parameters(result, {"team": "blues"}).spec.goals[1] == "Play as blues"


def test_bind_refuses_values_that_break_limits(tmp_path):
    result = load(tmp_path, project=base_project(goals=["${long}"]))
    with pytest.raises(ParameterBindingError) as caught:
        bind_parameters(result.project, {"long": "x" * 1001})  # type: ignore[arg-type]
    assert [str(e) for e in caught.value.errors] == [
        "spec.goals[0]: expected at most 1000 characters; got 1001 characters"
    ]


def test_bind_needs_a_loaded_package(tmp_path):
    broken = load(tmp_path, agents={})
    with pytest.raises(ValueError, match="did not load"):
        bind_parameters(broken, {})
