from __future__ import annotations

import json
from typing import Any

import pytest

from chronicle.kinds import Kind
from realms.plan import RealmPlan
from realms.warden import termination
from realms.warden.snapshot import (
    AgentState,
    LiveSnapshot,
    build_snapshot,
    parse_duration,
)
from realms.warden.termination import Conclusion, evaluate, parse_conditions
from tests.chronicle.realmkit import DM_AB, event, running, say
from tests.fixtures.compat import COMPAT
from tests.fixtures.realms import build_realm

pytestmark = pytest.mark.timeout(60)

REALM = "term-abc123"
START = 1_000


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path


def snap(**kw: Any) -> LiveSnapshot:
    base: dict[str, Any] = {
        "realm_id": REALM,
        "now_ms": START,
        "started_ms": START,
        "last_activity_ms": START,
    }
    return LiveSnapshot(**(base | kw))


def check(s: LiveSnapshot, conditions: list[dict[str, Any]], *, verdict_ends_realm=False):
    return evaluate(s, parse_conditions(conditions), verdict_ends_realm=verdict_ends_realm)


def test_durations_parse_every_unit():
    assert [parse_duration(t) for t in ("30s", "20m", "1h", "2d", "1.5m")] == [
        30,
        1200,
        3600,
        172800,
        90,
    ]
    with pytest.raises(ValueError, match="30s, 20m"):
        parse_duration("20 minutes")


def test_bad_conditions_are_refused_with_their_location():
    with pytest.raises(ValueError, match=r"termination\[1\]\.limit: required field missing"):
        parse_conditions([{"type": "referee_verdict"}, {"type": "stall"}])
    with pytest.raises(ValueError, match=r"termination\[0\]\.pattern: not a valid regular"):
        parse_conditions([{"type": "message", "pattern": "(", "match_mode": "regex"}])
    with pytest.raises(ValueError, match=r"termination\[0\]\.type: must be one of"):
        parse_conditions([{"type": "sudden_death"}])
    with pytest.raises(ValueError, match=r"termination\[0\]\.scope"):
        parse_conditions([{"type": "budget_exhausted", "scope": "everyone"}])


def test_duration_fires_at_its_limit_and_not_before():
    cond = [{"type": "duration", "limit": "1m"}]
    assert check(snap(now_ms=START + 59_999), cond) is None
    found = check(snap(now_ms=START + 60_000), cond)
    assert found == Conclusion("duration", "time limit 1m reached")


def test_stall_counts_idle_time_since_the_last_activity():
    cond = [{"type": "stall", "limit": "30s"}]
    quiet = snap(now_ms=START + 100_000, last_activity_ms=START + 80_000)
    assert check(quiet, cond) is None
    assert check(snap(now_ms=START + 110_000, last_activity_ms=START + 80_000), cond).reason == (
        "stall"
    )


@pytest.mark.django_db
def test_stall_idle_ignores_system_posts_but_counts_agent_posts_dms_and_game_events():
    build_realm(REALM)
    running(REALM, ts=START)
    say(REALM, "round 1: alice, your turn", START + 50_000)  # system grant
    s = build_snapshot(REALM, now_ms=START + 60_000)
    assert s.idle_s == 60.0
    say(REALM, "here is my move", START + 20_000, agent="alice")
    assert build_snapshot(REALM, now_ms=START + 60_000).idle_s == 40.0
    say(REALM, "psst", START + 30_000, agent="alice", channel=DM_AB)  # DM rooms are not Commons
    assert build_snapshot(REALM, now_ms=START + 60_000).idle_s == 40.0
    event(REALM, Kind.PRIVATE, {"from": "alice", "to": "bob", "text": "hi"}, START + 45_000)
    assert build_snapshot(REALM, now_ms=START + 60_000).idle_s == 15.0
    event(REALM, Kind.GAME, {"op": "act", "to": "bidding"}, START + 55_000)
    assert build_snapshot(REALM, now_ms=START + 60_000).idle_s == 5.0


@pytest.mark.django_db
def test_file_condition_reads_the_shared_folder(tmp_path):
    build_realm(REALM)
    running(REALM, ts=START)
    shared = tmp_path / "realms" / REALM / "shared"
    (shared / "drafts").mkdir(parents=True)
    (shared / "drafts" / "team-brief.md").write_text("# Brief\nSTATUS: DRAFT\n")
    cond = [{"type": "file", "path": "*brief.md", "content_match": "STATUS: FINAL"}]
    assert check(build_snapshot(REALM, now_ms=START), cond) is None

    (shared / "drafts" / "team-brief.md").write_text("# Brief\nSTATUS: FINAL\n")
    found = check(build_snapshot(REALM, now_ms=START), cond)
    assert found is not None and found.reason == "file"
    assert "drafts/team-brief.md" in found.detail


@pytest.mark.django_db
def test_file_condition_counts_and_skips_binary_and_oversized_files(tmp_path):
    build_realm(REALM)
    shared = tmp_path / "realms" / REALM / "shared"
    shared.mkdir(parents=True)
    (shared / "a.txt").write_text("done")
    (shared / "b.txt").write_bytes(b"\xff\xfe done")
    (shared / "c.txt").write_text("done" + "x" * 1_000_001)
    files = build_snapshot(REALM, now_ms=START).shared_files
    assert files["a.txt"] == "done" and files["b.txt"] is None and files["c.txt"] is None

    cond = [{"type": "file", "path": "*.txt", "content_match": "done", "count": 2}]
    assert check(build_snapshot(REALM, now_ms=START), cond) is None
    (shared / "d.txt").write_text("all done")
    assert check(build_snapshot(REALM, now_ms=START), cond).reason == "file"
    assert check(snap(shared_files={"x.md": "y"}), [{"type": "file", "path": "x.md"}]) is not None


def test_file_content_match_modes():
    files = {"out.txt": "  FINAL  \n", "log.txt": "phase 12 FINAL"}
    exact = [{"type": "file", "path": "*.txt", "content_match": "FINAL", "match_mode": "exact"}]
    found = check(snap(shared_files=files), exact)
    assert found is not None and "out.txt" in found.detail and "log.txt" not in found.detail
    regex = [
        {
            "type": "file",
            "path": "log.txt",
            "content_match": r"phase \d+ FINAL",
            "match_mode": "regex",
        }
    ]
    assert check(snap(shared_files=files), regex) is not None
    assert check(snap(shared_files={"log.txt": "phase x FINAL"}), regex) is None


@pytest.mark.django_db
def test_message_condition_counts_agent_messages_in_the_commons_only():
    build_realm(REALM)
    running(REALM, ts=START)
    cond = [
        {
            "type": "message",
            "channel": "commons",
            "pattern": r"(?im)^\u2705\s*SIGNED\b",
            "match_mode": "regex",
            "count": 2,
        }
    ]
    say(REALM, "✅ SIGNED", START + 1, agent="alice")
    say(REALM, "✅ SIGNED", START + 2)  # the system quoting it does not count
    say(REALM, "✅ SIGNED", START + 3, agent="bob", channel=DM_AB)  # nor does a DM
    assert check(build_snapshot(REALM, now_ms=START + 10), cond) is None
    # the same sender twice counts twice: messages, not senders
    say(REALM, "ok\n✅ signed here", START + 4, agent="alice")
    found = check(build_snapshot(REALM, now_ms=START + 10), cond)
    assert found is not None and found.reason == "message" and "alice" in found.detail


def test_message_match_modes_and_emoji_patterns():
    from realms.warden.snapshot import SeenMessage

    msgs = (SeenMessage(1, "ref", "commons", "🏁 Match over — bob wins"),)
    emoji = [{"type": "message", "pattern": r"(?i)\U0001f3c1\s*match over", "match_mode": "regex"}]
    assert check(snap(messages=msgs), emoji).reason == "message"
    assert check(snap(messages=msgs), [{"type": "message", "pattern": "bob wins"}]) is not None
    exact = [{"type": "message", "pattern": "bob wins", "match_mode": "exact"}]
    assert check(snap(messages=msgs), exact) is None


def agents(*specs: tuple[str, float, float | None]) -> dict[str, AgentState]:
    return {a: AgentState(a, spend_usd=spend, cap_usd=cap) for a, spend, cap in specs}


@pytest.mark.parametrize(
    ("scope", "roster", "fires"),
    [
        ("any_agent", [("a", 1.0, 1.0), ("b", 0.0, 1.0)], True),
        ("any_agent", [("a", 0.9, 1.0), ("b", 5.0, None)], False),
        ("all_agents", [("a", 1.0, 1.0), ("b", 0.5, 1.0)], False),
        ("all_agents", [("a", 1.0, 1.0), ("b", 1.2, 1.0)], True),
        ("all_agents", [("a", 1.0, 1.0), ("b", 9.0, None)], False),
        ("realm_total", [("a", 1.5, 1.0), ("b", 0.5, 1.0)], True),
        ("realm_total", [("a", 1.0, 1.0), ("b", 0.5, 1.0)], False),
        ("realm_total", [("a", 3.0, 1.0), ("b", 0.0, None)], False),
    ],
)
def test_budget_exhausted_scopes(scope, roster, fires):
    s = snap(agents=agents(*roster))
    found = check(s, [{"type": "budget_exhausted", "scope": scope}])
    assert (found is not None and found.reason == "budget_exhausted") is fires


def test_referee_verdict_fires_on_a_verdict_only():
    cond = [{"type": "referee_verdict"}]
    assert check(snap(), cond) is None
    found = check(snap(verdict={"outcome": "bob wins", "final": True}), cond)
    assert found == Conclusion("referee_verdict", "the referee ruled: bob wins")


def test_verdict_ends_realm_adds_an_implicit_referee_verdict_after_the_declared_ones():
    s = snap(verdict={"outcome": "draw"}, now_ms=START + 7_200_000)
    assert check(s, [], verdict_ends_realm=False) is None
    assert check(s, [], verdict_ends_realm=True).reason == "referee_verdict"
    # declared conditions come first
    assert check(s, [{"type": "duration", "limit": "1h"}], verdict_ends_realm=True).reason == (
        "duration"
    )


@pytest.mark.django_db
def test_machine_terminal_follows_the_replayed_state():
    build_realm(REALM)
    declaration = {"initial": "lobby", "terminal": ["done"], "states": ["lobby", "play", "done"]}
    event(REALM, Kind.MACHINE, {"version": 1, "declaration": declaration}, START)
    cond = [{"type": "machine_terminal"}]
    s = build_snapshot(REALM, now_ms=START)
    assert s.machine_state == "lobby" and check(s, cond) is None
    event(REALM, Kind.GAME, {"op": "act", "from": "lobby", "to": "play"}, START + 1)
    event(REALM, Kind.GAME, {"op": "reject", "transition": "finish", "to": "done"}, START + 2)
    assert check(build_snapshot(REALM, now_ms=START), cond) is None
    event(REALM, Kind.GAME, {"op": "act", "from": "play", "to": "done"}, START + 3)
    found = check(build_snapshot(REALM, now_ms=START), cond)
    assert found == Conclusion("machine_terminal", "the state machine reached done")


def test_declared_order_decides_when_several_hold():
    s = snap(
        now_ms=START + 3_600_000,
        verdict={"outcome": "alice"},
        shared_files={"report.md": "x"},
    )
    conds = [
        {"type": "file", "path": "report.md"},
        {"type": "referee_verdict"},
        {"type": "duration", "limit": "1h"},
    ]
    assert check(s, conds).reason == "file"
    assert check(s, conds[1:]).reason == "referee_verdict"
    assert check(s, list(reversed(conds))).reason == "duration"


@pytest.mark.django_db
def test_manual_stop_flag_is_checked_after_the_declared_conditions():
    build_realm(REALM, agents=[{"id": "alice"}])
    running(REALM, ts=START)
    assert check(build_snapshot(REALM, now_ms=START), []) is None
    assert termination.request_stop(REALM) is True
    s = build_snapshot(REALM, now_ms=START + 3_600_000)
    assert s.stop_requested
    assert check(s, []) == Conclusion("manual", "stop requested by the operator")
    assert check(s, [{"type": "duration", "limit": "1h"}]).reason == "duration"


@pytest.mark.django_db
def test_a_stop_for_a_realm_without_a_row_marks_nothing():
    assert termination.request_stop("no-such-realm") is False


@pytest.mark.django_db
def test_no_active_participants_when_every_player_is_stopped():
    build_realm(
        REALM,
        agents=[{"id": "ref", "role": "referee"}, {"id": "alice"}, {"id": "bob"}],
    )
    assert check(build_snapshot(REALM, now_ms=START), []) is None
    event(REALM, Kind.SYSTEM, {"event": "agent_stopped", "agent": "alice"}, START)
    s = build_snapshot(REALM, now_ms=START)
    assert s.live_participants == ("bob",) and check(s, []) is None
    event(REALM, Kind.LIFECYCLE, {"event": "agent_killed", "agent": "bob"}, START)
    found = check(build_snapshot(REALM, now_ms=START), [])
    assert found is not None and found.reason == "no_active_participants"


def test_a_realm_without_participants_is_not_ended_for_lacking_them():
    s = snap(agents={"ref": AgentState("ref", role="referee")})
    assert check(s, []) is None


def test_realm_conditions_and_verdict_power_come_from_the_snapshot():
    project = {
        "spec": {"termination": [{"type": "stall", "limit": "20m"}]},
        "agents": [{"id": "ref", "role": "referee", "powers": {"verdict_ends_realm": True}}],
    }
    plan = RealmPlan.parse(project, {})
    conds = termination.realm_conditions(plan)
    assert [(c.type, c.limit_s) for c in conds] == [("stall", 1200.0)]
    assert plan.verdict_ends_realm is True
    assert RealmPlan.parse({}, {"agents": [{"id": "ref"}]}).verdict_ends_realm is False
    bare = RealmPlan.parse({}, {"termination": [{"type": "referee_verdict"}]})
    assert termination.realm_conditions(bare)[0].type == "referee_verdict"


def test_evaluate_takes_declared_dicts_as_they_are():
    s = snap(now_ms=START + 2_000)
    found = evaluate(s, [{"type": "duration", "limit": "1s"}], verdict_ends_realm=False)
    assert found == Conclusion("duration", "time limit 1s reached")


def test_declared_manual_and_no_participant_conditions_and_loader_shaped_dicts():
    # the loader's snapshot carries every field, unset ones as None
    declared = {
        "limit": None,
        "path": None,
        "content_match": None,
        "count": None,
        "channel": None,
        "pattern": None,
        "match_mode": "substring",
        "scope": None,
    }
    conds = [declared | {"type": "manual"}, declared | {"type": "no_active_participants"}]
    assert check(snap(), conds) is None
    assert check(snap(stop_requested=True), conds).reason == "manual"
    gone = {"p": AgentState("p", stopped=True)}
    assert check(snap(agents=gone), conds).reason == "no_active_participants"
    stall = [declared | {"type": "stall", "limit": "10s"}]
    assert check(snap(now_ms=START + 10_000), stall).reason == "stall"


@pytest.mark.compat
def test_every_reference_example_termination_list_parses():
    projects = sorted(COMPAT.glob("*/project.json"))
    assert len(projects) >= 20
    for project in projects:
        spec = json.loads(project.read_text())["spec"]
        conds = parse_conditions(spec.get("termination") or [])
        assert conds, project.parent.name
        # none of them ends a fresh realm at its first tick
        assert evaluate(snap(), conds, verdict_ends_realm=True) is None, project.parent.name


@pytest.mark.django_db
def test_symlinks_in_the_shared_folder_are_never_followed(tmp_path):
    build_realm(REALM)
    outside = tmp_path / "host-secret.txt"
    outside.write_text("STATUS: FINAL")
    (tmp_path / "host-dir").mkdir()
    (tmp_path / "host-dir" / "brief.md").write_text("STATUS: FINAL")
    shared = tmp_path / "realms" / REALM / "shared"
    shared.mkdir(parents=True)
    (shared / "brief.md").symlink_to(outside)
    (shared / "linked").symlink_to(tmp_path / "host-dir")
    files = build_snapshot(REALM, now_ms=START).shared_files
    assert files == {}
    cond = [{"type": "file", "path": "*brief.md", "content_match": "FINAL"}]
    assert check(build_snapshot(REALM, now_ms=START), cond) is None
