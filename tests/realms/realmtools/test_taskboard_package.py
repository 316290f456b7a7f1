"""Declaring a task board and on-demand skills in a package: what validates, what is refused."""

from __future__ import annotations

from realms.plan import RealmPlan
from tests.realms.packages.helpers import base_agents, base_project, load, messages

P = "project.json"


def test_a_task_board_with_a_lease_and_leads_validates_and_plans(tmp_path):
    board = {"kind": "task-board", "lease": "2m", "leads": ["ping"]}
    agents = base_agents()
    agents["pong"]["skills_mode"] = "on_demand"
    result = load(tmp_path, project=base_project(mechanics=[board]), agents=agents)
    assert result.ok, messages(result)
    assert result.project is not None
    plan = RealmPlan.parse(result.project.snapshot(), {})
    assert plan.task_board is not None
    assert (plan.task_board.lease_s, plan.task_board.leads) == (120.0, ("ping",))
    assert plan.agent("pong").skills_mode == "on_demand"  # type: ignore[union-attr]
    assert plan.agent("ping").skills_mode == "inline"  # type: ignore[union-attr]


def test_a_package_without_a_board_plans_none(tmp_path):
    result = load(tmp_path, project=base_project(mechanics=[{"kind": "sealed-submit"}]))
    assert result.ok and result.project is not None
    assert RealmPlan.parse(result.project.snapshot(), {}).task_board is None


def test_bad_board_declarations_are_located(tmp_path):
    project = base_project(
        mechanics=[
            {"kind": "task-board", "lease": "5s", "leads": ["umpire", "ghost"], "ruleset": "x"},
            {"kind": "task-board"},
            {"kind": "sealed-submit", "lease": "1m"},
        ]
    )
    agents = base_agents()
    agents["ping"]["skills_mode"] = "lazy"
    result = load(tmp_path, project=project, agents=agents)
    assert not result.ok
    # ping failed its own validation, so the roster the leads are checked against is pong.
    assert messages(result) == [
        'agents/ping/agent.json: skills_mode: expected one of inline, on_demand; got "lazy"',
        f"{P}: spec.mechanics[0].ruleset: a task-board takes no ruleset",
        f'{P}: spec.mechanics[0].lease: expected a duration from 30s to 1d; got "5s"',
        f"{P}: spec.mechanics[0].leads[0]: expected a participant of the roster (pong); "
        'got "umpire"',
        f"{P}: spec.mechanics[0].leads[1]: expected a participant of the roster (pong); "
        'got "ghost"',
        f"{P}: spec.mechanics[1].kind: a project declares at most one task-board",
        f"{P}: spec.mechanics[2].lease: only a task-board mechanic takes lease",
    ]


def test_tasks_complete_needs_a_board(tmp_path):
    project = base_project(termination=[{"type": "tasks_complete"}])
    assert messages(load(tmp_path, project=project)) == [
        f"{P}: spec.termination[0].type: tasks_complete needs a task-board mechanic in "
        "spec.mechanics"
    ]
    board = base_project(
        termination=[{"type": "tasks_complete"}], mechanics=[{"kind": "task-board"}]
    )
    assert load(tmp_path / "ok", project=board).ok
