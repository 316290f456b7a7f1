"""The test realm builder (tests/fixtures/realms.py): a launched realm, then a state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronicle.models import Event
from realms.models import Realm, RealmAgent
from realms.services.launch import LaunchError
from realms.warden.models import WardenState
from tests.fixtures.realms import RealmBuilder

pytestmark = pytest.mark.django_db


def test_the_package_is_written_and_launched(realm_builder: RealmBuilder, tmp_path: Path) -> None:
    realm = realm_builder(
        "built-abc123",
        name="Built",
        agents=[
            {"id": "zoe", "tools": ["web_fetch"], "private_messaging": {"enabled": True}},
            {"id": "amy", "budget": 0.5, "on_exhausted": "kill"},
            {"id": "ref", "role": "referee"},
        ],
        spec={
            "turns": {"policy": "one-at-a-time", "silence_timeout_s": 120},
            "termination": [{"type": "duration", "limit": "5m"}],
            "tools": {"web_fetch": {"max_calls_per_agent": 2}},
        },
    )
    (written,) = (tmp_path / "packages").iterdir()
    assert realm.package_path == str(written.resolve())
    assert json.loads((written / "project.json").read_text())["metadata"] == {"name": "Built"}
    assert realm.state == Realm.State.PENDING and realm.package_name == "Built"
    rows = RealmAgent.objects.filter(realm=realm).order_by("position")
    # the roster keeps the order given, not the sorted one of agent folders
    assert [(a.agent_id, a.role, a.state) for a in rows] == [
        ("zoe", "participant", "pending"),
        ("amy", "participant", "pending"),
        ("ref", "referee", "pending"),
    ]
    assert rows[1].budget_usd == 0.5 and rows[1].on_exhausted == "kill"
    config = realm.run_config
    assert config["turns"]["silence_timeout_s"] == 120
    assert config["termination"][0]["type"] == "duration"
    assert config["agents"][0]["private_messaging"]["enabled"] is True
    assert config["referee"] == "ref"
    manifest = Event.objects.get(realm_id=realm.realm_id, kind="tool_manifest").payload
    assert manifest["grants"]["zoe"] == ["web_fetch"]
    assert WardenState.objects.filter(realm=realm).exists()


def test_the_realm_and_its_agents_are_moved_to_the_state_asked(
    realm_builder: RealmBuilder,
) -> None:
    realm = realm_builder(
        agents=[{"id": "ann"}, {"id": "ben", "state": RealmAgent.State.KILLED}],
        state=Realm.State.RUNNING,
        claimed_by="host:1",
    )
    assert realm.state == Realm.State.RUNNING and realm.started_at is not None
    assert realm.claimed_by == "host:1"
    states = dict(RealmAgent.objects.filter(realm=realm).values_list("agent_id", "state"))
    assert states == {"ann": "running", "ben": "killed"}
    over = realm_builder(state=Realm.State.ARCHIVED)
    assert over.started_at is None
    assert set(RealmAgent.objects.filter(realm=over).values_list("state", flat=True)) == {"pending"}


def test_a_package_the_loader_refuses_is_a_launch_error(realm_builder: RealmBuilder) -> None:
    with pytest.raises(LaunchError, match="referee"):
        realm_builder(agents=[{"id": "a", "role": "referee"}, {"id": "b", "role": "referee"}])
    assert not Realm.objects.exists()
