"""Every package of the reference system loads, or is refused for the reason the reference
itself would refuse it."""

from __future__ import annotations

import pytest

from realms.packages import load_package
from tests.fixtures.compat import packages

from .helpers import COMPAT

# The corpus comes from BEARPIT_COMPAT_DIR; without it these tests are left out.
pytestmark = pytest.mark.compat
PACKAGES = packages()

# The stored copy of this one mixes file versions; the reference refuses it too.
REFUSED = {
    "rps-machine": [
        "agents/orin: agent folder has no agent.json (or agent.yaml)",
        "agents/vela: agent folder has no agent.json (or agent.yaml)",
    ],
}


def test_the_corpus_is_all_there():
    assert len(PACKAGES) == 23


@pytest.mark.parametrize("name", PACKAGES)
def test_compat_package(name):
    result = load_package(COMPAT / name)
    if name in REFUSED:
        assert not result.ok
        assert [str(e) for e in result.errors] == REFUSED[name]
        assert result.project is None
        return
    assert result.ok, [str(e) for e in result.errors]
    assert result.project is not None
    ids = [agent.id for agent in result.project.agents]
    assert ids == sorted(ids)  # roster order is folder-name order
    assert not result.tool_problems
    for agent in result.project.agents:
        has_file = (COMPAT / name / "agents" / agent.id / "persona.md").exists()
        assert bool(agent.persona) == has_file, agent.id


def test_compat_details():
    poker = load_package(COMPAT / "poker-table").project
    assert poker is not None and poker.machine is not None
    assert len(poker.machine.transitions) == 16
    vega = poker.agent("vega")
    assert vega is not None and "pot-odds" in vega.local_skills
    assert poker.referee is not None and poker.referee.id == "pitboss"
    fact = load_package(COMPAT / "fact-race")
    assert fact.project is not None
    assert fact.project.agent("scout").tools == ["web_fetch"]  # type: ignore[union-attr]
    assert list(fact.project.spec.tools) == ["web_fetch"]
    assert any("old tool name web.fetch read as web_fetch" in str(w) for w in fact.warnings)
    rps = load_package(COMPAT / "rps-duel").project
    assert rps is not None and rps.api_version == "agentrealm/v1alpha1"
    border = load_package(COMPAT / "border-states").project
    assert border is not None
    assert "board.json" in border.agent("cartographer").resource_files  # type: ignore[union-attr]
    assert border.agent("sablerock").persona is None  # type: ignore[union-attr]
    machine_realm = load_package(COMPAT / "rps-machine")
    assert machine_realm.credentials_required == ["azure-main"]


@pytest.mark.parametrize("name", [n for n in PACKAGES if n not in REFUSED])
def test_snapshot_round_trips(name):
    from realms.packages import Project

    project = load_package(COMPAT / name).project
    assert project is not None
    snapshot = project.snapshot()
    import json

    again = Project.model_validate(json.loads(json.dumps(snapshot)))
    assert again == project
