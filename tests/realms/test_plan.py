"""The realm plan: one parse of a realm's stored dicts, and the rules decided on it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chronicle.kinds import Kind
from chronicle.selectors import agents_out
from ledger.services.profiles import seed_profiles
from realms.models import Realm, RealmAgent
from realms.plan import (
    DmRule,
    PlanAgent,
    RealmPlan,
    may_write,
    permitted_pairs,
    plan_of,
    referee_of,
    role_skill,
)
from realms.services.launch import launch_realm
from tests.chronicle.realmkit import event
from tests.conftest import REPO
from tests.fixtures.realms import build_realm

TOOLCHECK = REPO / "examples" / "toolcheck"
WHISPERS = REPO / "tests" / "e2e" / "packages" / "whispers"


@pytest.fixture
def launched(db: None) -> None:
    seed_profiles()


def test_a_launched_toolcheck_realm_plans_its_roster_turns_and_flags(launched: None) -> None:
    plan = plan_of(launch_realm(TOOLCHECK))
    assert plan.name == "toolcheck"
    assert plan.roster == ("ping", "pong", "umpire")
    assert plan.referee == "umpire" and plan.participants == ("ping", "pong")
    ping, umpire = plan.agent("ping"), plan.agent("umpire")
    assert ping is not None and umpire is not None
    assert (ping.model, ping.provider, ping.budget_usd) == ("scripted-small", "offline", 0.5)
    assert ping.on_exhausted == "starve_then_kill" and ping.grace_s == 120.0
    assert ping.role_skill == "agent-basics" and umpire.role_skill == "referee-basics"
    assert umpire.is_referee and umpire.rubric and umpire.verdict_ends_realm
    assert plan.verdict_ends_realm and plan.referee_opens and plan.referee_drives
    assert plan.turns is not None
    assert plan.turns.min_rounds_before_verdict == 1 and plan.turns.retire_after_misses == 2
    assert plan.turns.silence_timeout_s >= 180.0
    assert [t["type"] for t in plan.termination] == ["referee_verdict", "duration", "stall"]
    assert plan.require_mention and not plan.referee_sees_all and plan.realmtools
    assert not plan.environment.allow_side_channels and not plan.environment.shared_folder
    assert plan.environment.network_egress == "model_only"
    assert plan.goals and plan.guidelines and plan.restrictions


def test_the_plan_is_parsed_once_per_row(launched: None) -> None:
    realm = launch_realm(TOOLCHECK)
    assert plan_of(realm) is plan_of(realm)
    fresh = Realm.objects.get(pk=realm.pk)
    assert plan_of(fresh) == plan_of(realm)


def test_whispers_pairs_partners_and_quotas_follow_the_dm_rule(launched: None) -> None:
    plan = plan_of(launch_realm(WHISPERS))
    assert plan.referee == "moderator"
    assert permitted_pairs(plan.agents) == [("ann", "ben"), ("cat", "dan")]
    assert plan.dm_partners("ann") == {"ben"} and plan.dm_partners("moderator") == set()
    assert plan.dm_quotas() == {"ann": 1, "ben": 0, "cat": 0, "dan": 0, "moderator": 0}
    ann, ben, cat = plan.agent("ann"), plan.agent("ben"), plan.agent("cat")
    assert ann is not None and ben is not None and cat is not None
    assert may_write(ann, ben) and may_write(ben, ann)
    assert not may_write(ann, cat) and not may_write(cat, ann)


def _agent(agent_id: str, role: str = "participant", **dm: Any) -> PlanAgent:
    return PlanAgent(id=agent_id, role=role, dm=DmRule.parse(dm))


def test_the_dm_rule_one_way_to_the_referee_and_never_to_oneself() -> None:
    ref = _agent("ref", "referee")
    bold = _agent("bold", enabled=True, include_referee=True)
    shy = _agent("shy", enabled=True)
    mute = _agent("mute")
    assert may_write(bold, ref) and not may_write(ref, bold)
    assert not may_write(shy, ref)
    assert may_write(shy, mute) and not may_write(mute, shy)
    assert not may_write(bold, bold)
    assert permitted_pairs([ref, bold, shy, mute]) == [
        ("ref", "bold"),
        ("bold", "shy"),
        ("bold", "mute"),
        ("shy", "mute"),
    ]
    picky = _agent("picky", enabled=True, peers=["mute"])
    assert may_write(picky, mute) and not may_write(picky, shy)


def test_the_referee_is_the_first_agent_in_the_referee_role() -> None:
    assert referee_of([("a", "participant"), ("r", "referee"), ("s", "referee")]) == "r"
    assert referee_of([("a", None), ("b", "participant")]) is None
    assert role_skill("referee") == "referee-basics" and role_skill(None) == "agent-basics"
    plan = RealmPlan.parse({"agents": [{"id": "a"}, {"id": "r", "role": "referee"}]}, {})
    assert plan.referee == "r" and plan.participants == ("a",)


@pytest.mark.django_db
def test_who_is_out_reads_eliminations_and_agents_stopped_for_good() -> None:
    realm_id = "out-abc123"
    build_realm(
        realm_id,
        agents=[
            {"id": "alice"},
            {"id": "bob"},
            {"id": "carol", "state": RealmAgent.State.KILLED},
            {"id": "dave", "state": RealmAgent.State.STOPPED},
        ],
    )
    event(realm_id, Kind.ELIMINATION, {"agent": "bob", "reason": "caught"}, 1_000)
    event(realm_id, Kind.ELIMINATION, {"agent": None, "reason": "nobody out"}, 2_000)
    event("other-abc123", Kind.ELIMINATION, {"agent": "alice"}, 1_000)
    assert agents_out(realm_id) == {"bob", "carol"}


# A row as the current launch stores it (project snapshot and run_config), trimmed to
# what varies; stored realms must keep parsing to the same plan.
STORED_PROJECT: dict[str, Any] = {
    "apiVersion": "bearpit/v1alpha1",
    "kind": "Project",
    "metadata": {"name": "Stored", "tags": []},
    "spec": {
        "goals": ["win"],
        "guidelines": None,
        "environment": {
            "shared_folder": {"enabled": True},
            "network_egress": "none",
            "egress_allowlist": [],
            "allow_side_channels": True,
            "require_mention": True,
        },
        "termination": [
            {"type": "message", "pattern": "END", "match_mode": "exact", "count": 2},
        ],
        "mechanics": [
            {"kind": "state-machine", "machine": {"initial": "a", "referee_reads_commons": True}}
        ],
        "turns": None,
        "stall_nudge": False,
        "referee_opens": False,
        "tools": {"web.fetch": {"max_calls_per_agent": 3}},
        "outputs": ["report.md"],
    },
    "agents": [
        {
            "id": "ref",
            "role": "referee",
            "tools": [],
            "skills": [{"source": "builtin", "ref": "referee-scorekeeper"}],
            "private_messaging": {"enabled": False},
            "powers": {"verdict_ends_realm": False},
            "budget": {"grace_period": None},
            "resource_files": {"rules.md": "rules"},
        },
        {
            "id": "zed",
            "name": "Zed",
            "tools": ["web.fetch"],
            "skills": [{"source": "local", "ref": "mine"}],
            "local_skills": {"mine": "my skill"},
            "private_messaging": {"enabled": True, "include_referee": True, "max_per_round": 2},
            "budget": {"grace_period": "30s"},
            "persona": "a zed",
        },
    ],
    "project_resources": {"map.md": "map"},
    "project_skills": {"house": "house rules"},
}
STORED_CONFIG: dict[str, Any] = {
    "provider": "offline",
    "parameters": {"seed": "7"},
    "turns": None,
    "free_response": True,
    "require_mention": False,
    "referee_sees_all": True,
    "referee_opens": False,
    "stall_nudge": False,
    "realmtools": True,
    "environment": {"network_egress": "none", "shared_folder": True, "allow_side_channels": True},
    "termination": [{"type": "message", "pattern": "END", "count": 2}],
    "referee": "ref",
    "agents": [
        {"id": "ref", "role": "referee", "model": "m-big", "provider": "offline",
         "budget_usd": None, "on_exhausted": "starve", "verdict_ends_realm": False,
         "context_length": 64000, "effort": "high"},
        {"id": "zed", "role": "participant", "model": "m-small", "provider": "offline",
         "budget_usd": 0.25, "on_exhausted": "kill", "verdict_ends_realm": False},
    ],
}  # fmt: skip


def test_a_stored_realm_of_the_current_format_parses() -> None:
    plan = RealmPlan.parse(json.loads(json.dumps(STORED_PROJECT)), STORED_CONFIG)
    assert plan.roster == ("ref", "zed") and plan.referee == "ref"
    ref, zed = plan.agent("ref"), plan.agent("zed")
    assert ref is not None and zed is not None
    assert (ref.model, ref.context_length, ref.effort) == ("m-big", 64000, "high")
    assert ref.budget_usd is None and zed.budget_usd == 0.25 and zed.on_exhausted == "kill"
    assert (zed.name, zed.persona) == ("Zed", "a zed")
    assert zed.grace_s == 30.0 and ref.grace_s is None
    assert zed.granted == {"web_fetch"}
    assert plan.tool_policy == {"web_fetch": {"max_calls_per_agent": 3}}
    assert zed.local_skills == {"mine": "my skill"} and ref.resource_files == {"rules.md": "rules"}
    assert plan.project_resources == {"map.md": "map"}
    assert plan.project_skills == {"house": "house rules"}
    assert plan.dm_partners("ref") == {"zed"} and plan.dm_quotas()["zed"] == 2
    assert plan.turns is None and plan.machine is not None and plan.referee_reads_commons
    # the snapshot's termination keeps the declared match_mode, run_config's drops it
    assert plan.termination == (
        {"type": "message", "pattern": "END", "match_mode": "exact", "count": 2},
    )
    assert plan.environment.shared_folder and plan.environment.network_egress == "none"
    assert plan.outputs == ("report.md",) and plan.parameters == {"seed": "7"}
    assert plan.free_response and not plan.require_mention and plan.referee_sees_all
    assert not plan.stall_nudge and not plan.referee_opens and not plan.verdict_ends_realm
    assert plan.realmtools and plan.goals == ("win",) and plan.guidelines is None
    assert RealmPlan.parse(None, None) == RealmPlan()


def test_older_rows_keep_agents_as_a_map_and_carry_no_run_config() -> None:
    plan = RealmPlan.parse(
        {
            "spec": {"turns": {"min_rounds_before_verdict": 2}, "environment": {}},
            "agents": {"b": {"role": "referee"}, "a": {"budget": {"grace_period": 5}}},
        },
        {},
    )
    assert plan.roster == ("a", "b") and plan.referee == "b"
    assert plan.turns is not None and plan.turns.min_rounds_before_verdict == 2
    assert plan.turns.silence_timeout_s == 90.0 and plan.turns.referee_cue == "round"
    a = plan.agent("a")
    assert a is not None and a.grace_s == 5.0
    assert plan.require_mention and plan.stall_nudge and not plan.realmtools
