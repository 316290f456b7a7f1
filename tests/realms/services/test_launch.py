"""Launch: packages become pending realms with a run_config, or nothing changes."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from chronicle.models import Event
from ledger.services.profiles import seed_profiles
from realms.models import Realm, RealmAgent
from realms.services.launch import LaunchError, LaunchOptions, launch_realm, realm_slug
from realms.warden.models import WardenState
from tests.conftest import REPO
from tests.fixtures.compat import COMPAT

TOOLCHECK = REPO / "examples" / "toolcheck"
pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def profiles() -> None:
    # A transactional test elsewhere in the session may have emptied the seeded table.
    seed_profiles()


def test_it_creates_a_pending_realm_with_its_agents_and_manifest() -> None:
    realm = launch_realm(TOOLCHECK)
    assert re.fullmatch(r"toolcheck-[0-9a-f]{6}", realm.realm_id)
    assert realm.state == Realm.State.PENDING
    agents = list(RealmAgent.objects.filter(realm=realm).order_by("position"))
    assert [(a.agent_id, a.role) for a in agents] == [
        ("ping", "participant"),
        ("pong", "participant"),
        ("umpire", "referee"),
    ]
    assert agents[0].model == "scripted-small" and agents[2].model == "scripted-medium"
    assert float(agents[2].budget_usd or 0) == 1.0
    assert WardenState.objects.filter(realm=realm).exists()
    events = list(Event.objects.filter(realm_id=realm.realm_id))
    assert [e.kind for e in events] == ["tool_manifest"]
    assert events[0].payload["grants"] == {"ping": [], "pong": [], "umpire": []}
    config = realm.run_config
    assert config["provider"] == "offline" and config["provider_fallback"] is False
    assert config["referee"] == "umpire" and config["referee_opens"] is True
    assert config["require_mention"] is True and config["referee_sees_all"] is False
    assert config["realmtools"] is True
    assert config["turns"]["min_rounds_before_verdict"] == 1
    assert [t["type"] for t in config["termination"]] == ["referee_verdict", "duration", "stall"]
    umpire = config["agents"][2]
    assert umpire["verdict_ends_realm"] is True
    assert umpire["skills"][0] == "builtin:referee-basics"
    assert realm.project["agents"][0]["id"] == "ping"
    assert realm.package_path == str(TOOLCHECK.resolve())


def test_free_response_lifts_mention_gating() -> None:
    realm = launch_realm(TOOLCHECK, LaunchOptions(free_response=True))
    assert realm.run_config["require_mention"] is False
    assert realm.run_config["referee_sees_all"] is True


def test_a_supplied_realm_id_is_used_once() -> None:
    launch_realm(TOOLCHECK, LaunchOptions(realm_id="my-relay"))
    with pytest.raises(LaunchError, match="already taken"):
        launch_realm(TOOLCHECK, LaunchOptions(realm_id="my-relay"))
    with pytest.raises(LaunchError, match="lower-case"):
        launch_realm(TOOLCHECK, LaunchOptions(realm_id="Bad Id"))
    assert Realm.objects.count() == 1


def test_an_invalid_package_is_refused_with_located_messages(tmp_path: Path) -> None:
    package = tmp_path / "broken"
    shutil.copytree(TOOLCHECK, package)
    agent = package / "agents" / "pong" / "agent.json"
    data = json.loads(agent.read_text())
    data["budget"]["on_exhausted"] = "explode"
    agent.write_text(json.dumps(data))
    with pytest.raises(LaunchError) as info:
        launch_realm(package)
    assert any("agents/pong/agent.json" in p and "on_exhausted" in p for p in info.value.problems)
    assert Realm.objects.count() == 0 and Event.objects.count() == 0


def _with_parameter(tmp_path: Path) -> Path:
    package = tmp_path / "relay"
    shutil.copytree(TOOLCHECK, package)
    project = json.loads((package / "project.json").read_text())
    project["spec"]["goals"] = ["Start from ${seed,,the first word}. Tone: ${tone,calm}."]
    (package / "project.json").write_text(json.dumps(project))
    return package


def test_parameters_are_bound_into_the_snapshot(tmp_path: Path) -> None:
    package = _with_parameter(tmp_path)
    realm = launch_realm(package, LaunchOptions(parameters={"seed": "plum"}))
    assert realm.project["spec"]["goals"] == ["Start from plum. Tone: calm."]
    assert realm.run_config["parameters"] == {"seed": "plum", "tone": "calm"}


def test_missing_and_unknown_parameters_need_consent_or_are_refused(tmp_path: Path) -> None:
    package = _with_parameter(tmp_path)
    with pytest.raises(LaunchError, match="seed") as info:
        launch_realm(package)
    assert info.value.missing[0]["name"] == "seed"
    with pytest.raises(LaunchError, match="colour: not a parameter"):
        launch_realm(package, LaunchOptions(parameters={"colour": "red"}))
    assert Realm.objects.count() == 0
    realm = launch_realm(package, LaunchOptions(allow_missing_parameters=True))
    assert realm.project["spec"]["goals"] == ["Start from . Tone: calm."]


@pytest.mark.compat
def test_a_state_machine_realm_chronicles_its_machine_before_provisioning() -> None:
    realm = launch_realm(COMPAT / "poker-table", LaunchOptions(allow_missing_parameters=True))
    kinds = list(Event.objects.filter(realm_id=realm.realm_id).values_list("kind", flat=True))
    assert kinds == ["tool_manifest", "machine"]
    machine = Event.objects.get(realm_id=realm.realm_id, kind="machine").payload
    assert machine["version"] == 1 and machine["referee"] == "pitboss"
    assert machine["roster"][0] == "lyra"
    assert all(isinstance(v, list) for v in machine["members"].values())


@pytest.mark.compat
def test_the_reference_poker_dealer_is_not_in_the_commons_feed() -> None:
    # The reference dealer may read the floor (referee_reads_commons) and its rubric
    # says it is never woken by it.
    realm = launch_realm(COMPAT / "poker-table", LaunchOptions(allow_missing_parameters=True))
    assert realm.project["spec"]["mechanics"][0]["machine"]["referee_reads_commons"] is True
    assert realm.run_config["referee_sees_all"] is False


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("toolcheck", "toolcheck"),
        ("Rock, Paper & Scissors!", "rock-paper-scissors"),
        ("--", "realm"),
    ],
)
def test_realm_slug(name: str, slug: str) -> None:
    assert realm_slug(name) == slug
