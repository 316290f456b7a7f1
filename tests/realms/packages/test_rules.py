"""One test per format rule, each asserting the exact located message."""

from __future__ import annotations

import pytest

from .helpers import base_agents, base_project, load, messages

P = "project.json"
PING = "agents/ping/agent.json"
UMP = "agents/umpire/agent.json"


def project_with(**spec):
    return base_project(**spec)


def agents_with(agent_id="ping", **fields):
    agents = base_agents()
    agents[agent_id].update(fields)
    return agents


CASES = [
    # --- project.json -------------------------------------------------------------------
    (
        "unknown top-level key",
        {**base_project(), "extra": 1},
        None,
        [f"{P}: extra: unknown field"],
    ),
    (
        "kind must be Project",
        {**base_project(), "kind": "Realm"},
        None,
        [f'{P}: kind: expected one of Project; got "Realm"'],
    ),
    (
        "metadata.name required",
        {**base_project(), "metadata": {}},
        None,
        [f"{P}: metadata.name: required field missing"],
    ),
    (
        "metadata.name length",
        {**base_project(), "metadata": {"name": "n" * 121}},
        None,
        [f"{P}: metadata.name: expected at most 120 characters; got 121 characters"],
    ),
    (
        "too many tags",
        {**base_project(), "metadata": {"name": "x", "tags": ["t"] * 31}},
        None,
        [f"{P}: metadata.tags: expected at most 30 items; got 31 items"],
    ),
    (
        "goal too long",
        project_with(goals=["g" * 1001]),
        None,
        [f"{P}: spec.goals[0]: expected at most 1000 characters; got 1001 characters"],
    ),
    (
        "egress allowlist refused",
        project_with(environment={"network_egress": "allowlist"}),
        None,
        [
            f"{P}: spec.environment.network_egress: expected one of none, model_only, open "
            '(allowlist is not implemented); got "allowlist"'
        ],
    ),
    (
        "egress enum",
        project_with(environment={"network_egress": "lan"}),
        None,
        [
            f"{P}: spec.environment.network_egress: expected one of none, model_only, "
            'allowlist, open; got "lan"'
        ],
    ),
    (
        "booleans are not coerced",
        project_with(stall_nudge="yes"),
        None,
        [f'{P}: spec.stall_nudge: expected true or false; got "yes"'],
    ),
    (
        "turns advance quiet-gap",
        project_with(turns={"advance": "quiet-gap"}),
        None,
        [
            f"{P}: spec.turns.advance: expected one-message (quiet-gap is not implemented); "
            'got "quiet-gap"'
        ],
    ),
    (
        "turns advance time-slice",
        project_with(turns={"advance": "time-slice"}),
        None,
        [
            f"{P}: spec.turns.advance: expected one-message (time-slice is not implemented); "
            'got "time-slice"'
        ],
    ),
    (
        "turns enforcement law",
        project_with(turns={"enforcement": "law"}),
        None,
        [f'{P}: spec.turns.enforcement: expected physics (law is not implemented); got "law"'],
    ),
    (
        "turns order random",
        project_with(turns={"order": "random"}),
        None,
        [f'{P}: spec.turns.order: expected roster (random is not implemented); got "random"'],
    ),
    (
        "turns referee_cue enum",
        project_with(turns={"referee_cue": "always"}),
        None,
        [f'{P}: spec.turns.referee_cue: expected one of round, turn, none; got "always"'],
    ),
    (
        "turns silence bounds",
        project_with(turns={"silence_timeout_s": 0, "min_rounds_before_verdict": 10001}),
        None,
        [
            f"{P}: spec.turns.min_rounds_before_verdict: expected a number of at most 10000; "
            "got 10001",
            f"{P}: spec.turns.silence_timeout_s: expected a number greater than 0; got 0",
        ],
    ),
    (
        "turns retire bound",
        project_with(turns={"retire_after_misses": 1001}),
        None,
        [f"{P}: spec.turns.retire_after_misses: expected a number of at most 1000; got 1001"],
    ),
    (
        "termination type enum",
        project_with(termination=[{"type": "timeout"}]),
        None,
        [
            f"{P}: spec.termination[0].type: expected one of duration, stall, file, message, "
            "budget_exhausted, referee_verdict, machine_terminal, manual, "
            'no_active_participants, tasks_complete; got "timeout"'
        ],
    ),
    (
        "duration needs limit",
        project_with(termination=[{"type": "duration"}]),
        None,
        [f"{P}: spec.termination[0].limit: required field missing (a duration condition needs it)"],
    ),
    (
        "stall needs limit",
        project_with(termination=[{"type": "stall"}]),
        None,
        [f"{P}: spec.termination[0].limit: required field missing (a stall condition needs it)"],
    ),
    (
        "file needs path",
        project_with(termination=[{"type": "file"}]),
        None,
        [f"{P}: spec.termination[0].path: required field missing (a file condition needs it)"],
    ),
    (
        "message needs pattern",
        project_with(termination=[{"type": "message"}]),
        None,
        [
            f"{P}: spec.termination[0].pattern: required field missing (a message condition "
            "needs it)"
        ],
    ),
    (
        "duration syntax",
        project_with(termination=[{"type": "duration", "limit": "1 hour"}]),
        None,
        [
            f"{P}: spec.termination[0].limit: expected a duration such as 30s, 20m, 1h or 2d; "
            'got "1 hour"'
        ],
    ),
    (
        "bad regex",
        project_with(termination=[{"type": "message", "pattern": "(oops", "match_mode": "regex"}]),
        None,
        [
            f"{P}: spec.termination[0].pattern: expected a valid regular expression (missing ), "
            'unterminated subpattern at position 0); got "(oops"'
        ],
    ),
    (
        "match_mode enum",
        project_with(termination=[{"type": "message", "pattern": "x", "match_mode": "glob"}]),
        None,
        [
            f"{P}: spec.termination[0].match_mode: expected one of substring, exact, regex; "
            'got "glob"'
        ],
    ),
    (
        "budget scope enum",
        project_with(termination=[{"type": "budget_exhausted", "scope": "everyone"}]),
        None,
        [
            f"{P}: spec.termination[0].scope: expected one of any_agent, all_agents, "
            'realm_total; got "everyone"'
        ],
    ),
    (
        "count at least 1",
        project_with(termination=[{"type": "message", "pattern": "x", "count": 0}]),
        None,
        [f"{P}: spec.termination[0].count: expected a number of at least 1; got 0"],
    ),
    (
        "machine_terminal needs a machine",
        project_with(termination=[{"type": "machine_terminal"}]),
        None,
        [
            f"{P}: spec.termination[0].type: machine_terminal needs a state-machine mechanic "
            "in spec.mechanics"
        ],
    ),
    (
        "mechanic kind enum",
        project_with(mechanics=[{"kind": "lottery"}]),
        None,
        [
            f"{P}: spec.mechanics[0].kind: expected one of sealed-submit, state-machine, "
            'task-board, schedules, background-jobs; got "lottery"'
        ],
    ),
    (
        "unknown ruleset",
        project_with(mechanics=[{"kind": "sealed-submit", "ruleset": "borda"}]),
        None,
        [
            f"{P}: spec.mechanics[0].ruleset: expected one of dominance, high-bid, low-bid, "
            'plurality, majority, unanimous or custom:<name>; got "borda"'
        ],
    ),
    (
        "state-machine needs machine",
        project_with(mechanics=[{"kind": "state-machine"}]),
        None,
        [f"{P}: spec.mechanics[0].machine: required field missing (a state-machine needs it)"],
    ),
    (
        "outputs must be relative",
        project_with(outputs=["/etc/passwd", "../x", "ok/*.md"]),
        None,
        [
            f"{P}: spec.outputs[0]: expected a path relative to the shared folder; got "
            '"/etc/passwd"',
            f'{P}: spec.outputs[1]: expected a path relative to the shared folder; got "../x"',
        ],
    ),
    (
        "spec.tools config schema",
        project_with(
            tools={
                "web_fetch": {
                    "allow": "*.org",
                    "max_calls_per_agent": -1,
                    "max_calls_by_agent": {"ping": "lots", "nobody": 1},
                    "timeout": 3,
                }
            }
        ),
        agents_with(tools=["web_fetch"]),
        [
            f"{P}: spec.tools.web_fetch.timeout: unknown field",
            f'{P}: spec.tools.web_fetch.allow: expected a list; got "*.org"',
            f"{P}: spec.tools.web_fetch.max_calls_by_agent.ping: expected a whole number; "
            'got "lots"',
            f"{P}: spec.tools.web_fetch.max_calls_per_agent: expected a number of at least 0; "
            "got -1",
            f"{P}: spec.tools.web_fetch.max_calls_by_agent.nobody: expected an agent id of the "
            'roster (ping, pong, umpire); got "nobody"',
        ],
    ),
    (
        "spec.tools key shape",
        project_with(tools={"WebFetch": {}}),
        None,
        [f'{P}: spec.tools.WebFetch: expected a tool name such as web_fetch; got "WebFetch"'],
    ),
]


@pytest.mark.parametrize(
    ("project", "agents", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_rule(tmp_path, project, agents, expected):
    result = load(tmp_path, project=project, agents=agents)
    assert messages(result) == expected
    assert not result.ok and result.project is None


def test_valid_variants_pass(tmp_path):
    project = project_with(
        turns={"referee_cue": "turn", "silence_timeout_s": 30},
        mechanics=[{"kind": "sealed-submit", "ruleset": "custom:borda"}],
        termination=[
            {"type": "message", "pattern": "(?i)done", "match_mode": "regex", "count": 2},
            {"type": "file", "path": "*.md", "content_match": "FINAL"},
            {"type": "budget_exhausted", "scope": "realm_total"},
            {"type": "stall", "limit": "1.5h"},
        ],
        outputs=["design.md", "sections/*.md"],
    )
    agents = base_agents()
    agents["ping"].update(
        model={
            "provider": "openai",
            "model": "gpt",
            "api_key_ref": "openai-main",
            "input_cost_per_token": 1e-6,
            "output_cost_per_token": 2e-6,
        },
        budget={"max_usd": 2, "on_exhausted": "starve_then_kill", "grace_period": "30s"},
        private_messaging={
            "enabled": True,
            "include_referee": True,
            "peers": ["pong"],
            "max_per_round": 2,
        },
        memory="persistent",
    )
    result = load(tmp_path, project=project, agents=agents)
    assert result.ok, messages(result)
    assert [str(w) for w in result.warnings] == [
        "agents/ping/agent.json: memory: persistent memory is not supported; the agent starts fresh"
    ]


def test_ungranted_tool_config_is_a_warning(tmp_path):
    # The reference loads a package that configures a tool no agent holds; so do we.
    result = load(tmp_path, project=project_with(tools={"web_fetch": {"max_calls_per_agent": 3}}))
    assert result.ok, messages(result)
    assert [str(w) for w in result.warnings] == [
        f"{P}: spec.tools.web_fetch: configures web_fetch, but no agent is granted it; "
        "the configuration is unused"
    ]


def test_ungranted_tool_config_is_still_checked(tmp_path):
    result = load(tmp_path, project=project_with(tools={"web_fetch": {"timeout": 3}}))
    assert messages(result) == [f"{P}: spec.tools.web_fetch.timeout: unknown field"]
    assert not result.ok and result.project is None


def test_realmtools_wiring(tmp_path):
    result = load(tmp_path)
    assert result.project is not None and result.project.realmtools_wired  # referee
    solo = load(tmp_path / "b", agents={"solo": {"id": "solo"}})
    assert solo.project is not None and not solo.project.realmtools_wired
    granted = load(tmp_path / "c", agents={"solo": {"id": "solo", "tools": ["web_fetch"]}})
    assert granted.project is not None and granted.project.realmtools_wired
    off = load(tmp_path / "d", project=project_with(provide_tools=False))
    assert off.project is not None and not off.project.realmtools_wired


def test_verdict_power_adds_referee_verdict(tmp_path):
    result = load(tmp_path, agents=agents_with("umpire", powers={"verdict_ends_realm": True}))
    project = result.project
    assert project is not None
    assert [c.type for c in project.effective_termination] == ["duration", "referee_verdict"]
