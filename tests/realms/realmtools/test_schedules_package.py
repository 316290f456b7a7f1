"""Declaring schedules and background jobs in a package: what validates, what is refused."""

from __future__ import annotations

from realms.plan import RealmPlan
from tests.realms.packages.helpers import base_project, load, messages

P = "project.json"


def test_schedules_and_jobs_validate_and_plan(tmp_path):
    mechanics = [
        {"kind": "schedules", "max_per_agent": 3, "min_every": "5m"},
        {"kind": "background-jobs", "max_per_agent": 4},
    ]
    result = load(tmp_path, project=base_project(mechanics=mechanics))
    assert result.ok, messages(result)
    assert result.project is not None
    plan = RealmPlan.parse(result.project.snapshot(), {})
    assert plan.schedules is not None and plan.jobs is not None
    assert (plan.schedules.max_per_agent, plan.schedules.min_every_s) == (3, 300.0)
    assert plan.jobs.max_per_agent == 4


def test_defaults_and_packages_without_them(tmp_path):
    both = [{"kind": "schedules"}, {"kind": "background-jobs"}]
    result = load(tmp_path / "a", project=base_project(mechanics=both))
    assert result.ok and result.project is not None
    plan = RealmPlan.parse(result.project.snapshot(), {})
    assert plan.schedules is not None and plan.jobs is not None
    assert (plan.schedules.max_per_agent, plan.schedules.min_every_s) == (10, 60.0)
    assert plan.jobs.max_per_agent == 2
    plain = load(tmp_path / "b", project=base_project(mechanics=[{"kind": "sealed-submit"}]))
    assert plain.ok and plain.project is not None
    plan = RealmPlan.parse(plain.project.snapshot(), {})
    assert plan.schedules is None and plan.jobs is None


def test_bad_declarations_are_located(tmp_path):
    project = base_project(
        mechanics=[
            {"kind": "schedules", "min_every": "5s", "lease": "1m"},
            {"kind": "schedules"},
            {"kind": "background-jobs", "max_per_agent": 9, "min_every": "1m"},
            {"kind": "task-board", "max_per_agent": 2},
            {"kind": "schedules", "max_per_agent": 0},
        ]
    )
    result = load(tmp_path, project=project)
    assert not result.ok
    # A bound below 1 is a schema error, found before the mechanic rules run.
    (only,) = messages(result)
    assert only.startswith(f"{P}: spec.mechanics[4].max_per_agent: ")
    fixed = project["spec"]["mechanics"][:4]
    result = load(
        tmp_path / "again", project={**project, "spec": {**project["spec"], "mechanics": fixed}}
    )
    assert messages(result) == [
        f'{P}: spec.mechanics[0].min_every: expected a duration from 30s to 1d; got "5s"',
        f"{P}: spec.mechanics[1].kind: a project declares at most one schedules",
        f"{P}: spec.mechanics[2].max_per_agent: expected 1 to 8; got 9",
        f"{P}: spec.mechanics[0].lease: only a task-board mechanic takes lease",
        f"{P}: spec.mechanics[2].min_every: only a schedules mechanic takes min_every",
        f"{P}: spec.mechanics[3].max_per_agent: only a schedules or background-jobs mechanic "
        "takes max_per_agent",
    ]
