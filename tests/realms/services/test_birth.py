"""Birth configs: what a runtime is told about its bus, built from the realm's plan."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ledger.services.profiles import seed_profiles
from realms.models import Realm
from realms.plan import plan_of
from realms.services.birth import build_birth
from realms.services.launch import LaunchOptions, launch_realm
from runtime.bus import Gate
from tests.conftest import REPO

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def profiles() -> None:
    # A transactional test elsewhere in the session may have emptied the seeded table.
    seed_profiles()


def _vault(tmp_path: Path, **machine: object) -> Path:
    package = tmp_path / "vault"
    shutil.copytree(REPO / "tests" / "e2e" / "packages" / "vault", package)
    project = package / "project.json"
    data = json.loads(project.read_text())
    data["spec"]["mechanics"][0]["machine"].update(machine)
    project.write_text(json.dumps(data))
    return package


def _referee_gate(realm: Realm) -> Gate:
    """The referee's bus gate, built from its birth config as its runtime builds it."""
    users = {a["id"]: f"@bp_{realm.realm_id}={a['id']}:pit" for a in realm.project["agents"]}
    birth = build_birth(
        realm_id=realm.realm_id,
        plan=plan_of(realm),
        agent_id="keeper",
        mxid=users["keeper"],
        access_token="token",
        commons_room_id="!commons:pit",
        dm_rooms={},
        users=users,
        system_mxid="@bp_system:pit",
        operator_mxid="@bp_operator:pit",
        virtual_key="key",
        model_name="scripted-medium",
        realmtools_token="realmtools",
    )
    assert birth.bus is not None
    return Gate(
        own_mxid=birth.bus.mxid,
        agent_id="keeper",
        dm_room_ids=frozenset(birth.bus.dm_rooms.values()),
        require_mention=birth.bus.require_mention,
        sees_all=birth.bus.referee_sees_all,
    )


@pytest.mark.parametrize("reads_commons", [False, True])
def test_a_machine_realms_referee_is_never_in_the_commons_feed(
    tmp_path: Path, reads_commons: bool
) -> None:
    # Even when it may read the Commons (through table_talk), the machine's referee is
    # woken only by its own cues, never by a player's post.
    realm = launch_realm(_vault(tmp_path, referee_reads_commons=reads_commons))
    assert realm.run_config["turns"] is None
    assert realm.run_config["referee_sees_all"] is False
    gate = _referee_gate(realm)
    fay = f"@bp_{realm.realm_id}=fay:pit"
    assert not gate.admits("!commons:pit", fay, "fay sees secret=amber", {})
    cue = "@keeper — the machine is waiting on you. Call game_state."
    assert gate.admits("!commons:pit", "@bp_system:pit", cue, {})


def test_free_response_ungates_a_machine_realms_referee_too(tmp_path: Path) -> None:
    package = _vault(tmp_path, referee_reads_commons=True)
    realm = launch_realm(package, LaunchOptions(free_response=True))
    assert realm.run_config["referee_sees_all"] is True
    gate = _referee_gate(realm)
    assert gate.admits("!commons:pit", f"@bp_{realm.realm_id}=fay:pit", "hello", {})


MAPS_SKILL = "---\nname: maps\ndescription: Reading the realm's maps.\n---\nLegend first.\n"


def _born_skills(tmp_path: Path, mode: str | None) -> list[dict[str, object]]:
    from tests.fixtures.realms import build_realm

    agent: dict[str, object] = {
        "id": "alice",
        "skills": [
            {"source": "builtin", "ref": "collaborator"},
            {"source": "local", "ref": "maps"},
        ],
    }
    if mode is not None:
        agent["skills_mode"] = mode
    realm = build_realm(
        agents=[agent], files={"skills/maps/SKILL.md": MAPS_SKILL}, root=tmp_path / mode_dir(mode)
    )
    birth = build_birth(
        realm_id=realm.realm_id,
        plan=plan_of(realm),
        agent_id="alice",
        mxid="@alice:pit",
        access_token="token",
        commons_room_id="!commons:pit",
        dm_rooms={},
        users={"alice": "@alice:pit"},
        system_mxid="@bp_system:pit",
        operator_mxid="@bp_operator:pit",
        virtual_key="key",
        model_name="scripted-medium",
        realmtools_token=None,
    )
    return [s.model_dump() for s in birth.skills]


def mode_dir(mode: str | None) -> str:
    return mode or "default"


def test_an_on_demand_agent_is_born_with_skills_named_and_described(tmp_path: Path) -> None:
    inline = _born_skills(tmp_path, None)
    # The package's skills/ folder holds maps, so it is a project skill as well.
    assert [s["on_demand"] for s in inline] == [False, False, False, False]
    born = _born_skills(tmp_path, "on_demand")
    assert [(s["name"], s["on_demand"]) for s in born] == [
        ("agent-basics", False),
        ("collaborator", True),
        ("maps", True),
        ("maps", True),
    ]
    assert (
        born[1]["description"] == "Opt-in for cooperative scenarios; work toward the shared goal."
    )
    assert (born[2]["description"], born[2]["text"]) == (
        "Reading the realm's maps.",
        "Legend first.",
    )
