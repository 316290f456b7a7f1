"""``spec.loops``: the optional loop and echo watch, strict like the rest of the format."""

from __future__ import annotations

import pytest

from realms.plan import LoopsPlan, RealmPlan

from .helpers import base_agents, base_project, load, messages

P = "project.json"


@pytest.mark.parametrize(
    ("loops", "expected"),
    [
        ({"window": 6, "every": 2}, f"{P}: spec.loops.every: unknown field"),
        (
            {"action": "stop"},
            f'{P}: spec.loops.action: expected one of nudge, conclude; got "stop"',
        ),
        ({"window": 1}, f"{P}: spec.loops.window: expected a number of at least 2; got 1"),
        (
            {"threshold": 1.5},
            f"{P}: spec.loops.threshold: expected a number of at most 1; got 1.5",
        ),
        ({"repeats": "3"}, f'{P}: spec.loops.repeats: expected a whole number; got "3"'),
        (
            {"window": 3, "repeats": 4},
            f"{P}: spec.loops: repeats (4) must not exceed window (3)",
        ),
    ],
)
def test_bad_loop_settings_are_located(tmp_path, loops, expected):
    result = load(tmp_path, project=base_project(loops=loops), agents=base_agents())
    assert messages(result) == [expected]
    assert not result.ok and result.project is None


def test_a_package_without_loops_watches_for_none(tmp_path):
    result = load(tmp_path, project=base_project(), agents=base_agents())
    assert result.ok, messages(result)
    assert result.project is not None and result.project.spec.loops is None
    assert RealmPlan.parse(result.project.snapshot(), {}).loops is None


def test_loop_settings_reach_the_plan(tmp_path):
    loops = {"window": 8, "threshold": 0.8, "repeats": 4, "action": "conclude"}
    result = load(tmp_path, project=base_project(loops=loops), agents=base_agents())
    assert result.ok, messages(result)
    assert result.project is not None
    plan = RealmPlan.parse(result.project.snapshot(), {})
    assert plan.loops == LoopsPlan(window=8, threshold=0.8, repeats=4, action="conclude")
    defaults = load(tmp_path / "d", project=base_project(loops={}), agents=base_agents())
    assert defaults.project is not None
    assert RealmPlan.parse(defaults.project.snapshot(), {}).loops == LoopsPlan()
