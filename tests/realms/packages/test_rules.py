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
            'no_active_participants; got "timeout"'
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
            f"{P}: spec.mechanics[0].kind: expected one of sealed-submit, state-machine; got "
            '"lottery"'
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
        "spec.tools must be granted",
        project_with(tools={"web_fetch": {"max_calls_per_agent": 3}}),
        None,
        [f"{P}: spec.tools.web_fetch: configures web_fetch, but no agent is granted it"],
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
    # --- agent.json ---------------------------------------------------------------------
    (
        "agent id regex",
        None,
        {"-x": {"id": "-x"}},
        [
            "agents/-x/agent.json: id: expected lowercase letters, digits and dashes, not "
            'starting with a dash; got "-x"'
        ],
    ),
    (
        "agent id required",
        None,
        {"ping": {"role": "participant"}},
        [f"{PING}: id: required field missing"],
    ),
    (
        "on_exhausted enum",
        None,
        agents_with(budget={"on_exhausted": "stop"}),
        [
            f"{PING}: budget.on_exhausted: expected one of starve, starve_then_kill, kill; "
            'got "stop"'
        ],
    ),
    (
        "grace period syntax",
        None,
        agents_with(budget={"on_exhausted": "starve_then_kill", "grace_period": "soon"}),
        [
            f"{PING}: budget.grace_period: expected a duration such as 30s, 20m, 1h or 2d; "
            'got "soon"'
        ],
    ),
    (
        "budget bounds",
        None,
        agents_with(budget={"max_usd": -1, "max_tokens": 1.5}),
        [
            f"{PING}: budget.max_usd: expected a number of at least 0; got -1",
            f"{PING}: budget.max_tokens: expected a whole number; got 1.5",
        ],
    ),
    (
        "role enum",
        None,
        agents_with(role="judge"),
        [f'{PING}: role: expected one of participant, referee; got "judge"'],
    ),
    (
        "model_category enum",
        None,
        agents_with(model_category="huge"),
        [f'{PING}: model_category: expected one of small, medium, large; got "huge"'],
    ),
    (
        "memory enum",
        None,
        agents_with(memory="forever"),
        [f'{PING}: memory: expected one of ephemeral, persistent; got "forever"'],
    ),
    (
        "color",
        None,
        agents_with(color="#12345"),
        [f'{PING}: color: expected a colour as #RRGGBB; got "#12345"'],
    ),
    (
        "at most one referee",
        None,
        agents_with("pong", role="referee"),
        [
            "agents/umpire/agent.json: role: a project has at most one referee (pong is already "
            "the referee)"
        ],
    ),
    (
        "rubric and powers are referee-only",
        None,
        agents_with(rubric="score well", powers={"read_dms": True}),
        [
            f"{PING}: rubric: rubric is for the referee only (role is participant)",
            f"{PING}: powers: powers is for the referee only (role is participant)",
        ],
    ),
    (
        "powers shape",
        None,
        agents_with("umpire", powers={"inspect_private_fs": "write"}),
        [f'{UMP}: powers.inspect_private_fs: expected one of none, read_only; got "write"'],
    ),
    (
        "tool name shape",
        None,
        agents_with(tools=["Web Fetch"]),
        [f'{PING}: tools[0]: expected a tool name such as web_fetch; got "Web Fetch"'],
    ),
    (
        "duplicate tool (also across spellings)",
        None,
        agents_with(tools=["web_fetch", "web.fetch"]),
        [f"{PING}: tools[1]: web_fetch is granted twice"],
    ),
    (
        "too many tools",
        None,
        agents_with(tools=[f"web_t{i}" for i in range(51)]),
        [f"{PING}: tools: expected at most 50 items; got 51 items"],
    ),
    (
        "realmtools verbs are not grants",
        None,
        agents_with(tools=["run_code"]),
        [
            f"{PING}: tools[0]: run_code is a realmtools verb every agent already has; only "
            "registry tools are granted"
        ],
    ),
    (
        "gh skills are rejected",
        None,
        agents_with(skills=[{"source": "gh", "ref": "gh://org/repo@v1"}]),
        [f'{PING}: skills[0].source: expected builtin or local (gh is not implemented); got "gh"'],
    ),
    (
        "unknown builtin skill",
        None,
        agents_with(skills=[{"source": "builtin", "ref": "chess-master"}]),
        [
            f"{PING}: skills[0].ref: expected a built-in skill (agent-basics, referee-basics, "
            "competitor, collaborator, referee-scorekeeper, referee-progress, social-deduction, "
            'referee-social-deduction); got "chess-master"'
        ],
    ),
    (
        "skill source enum",
        None,
        agents_with(skills=[{"source": "web", "ref": "x"}]),
        [f'{PING}: skills[0].source: expected one of builtin, local, gh; got "web"'],
    ),
    (
        "secret-shaped key handle",
        None,
        agents_with(model={"provider": "openai", "model": "gpt", "api_key_ref": "sk-abc123"}),
        [
            f"{PING}: model.api_key_ref: looks like a real key; give a key-store handle such as "
            "'anthropic-main' (secrets never live in a package)"
        ],
    ),
    (
        "hex key handle",
        None,
        agents_with(
            model={
                "provider": "azure",
                "model": "gpt",
                "api_key_ref": "0123456789abcdef0123456789abcdef",
            }
        ),
        [
            f"{PING}: model.api_key_ref: looks like a real key; give a key-store handle such as "
            "'anthropic-main' (secrets never live in a package)"
        ],
    ),
    (
        "cap with explicit model needs costs",
        None,
        agents_with(
            model={
                "provider": "openai",
                "model": "gpt",
                "api_key_ref": "openai-main",
                "input_cost_per_token": 0.000001,
            },
            budget={"max_usd": 2},
        ),
        [
            f"{PING}: model.output_cost_per_token: required field missing (the budget cap needs "
            "per-token costs when an explicit model is set)"
        ],
    ),
    (
        "model ref fields",
        None,
        agents_with(
            model={
                "provider": "",
                "model": "m",
                "api_key_ref": "h",
                "effort": "extreme",
                "context_length": 0,
            }
        ),
        [
            f'{PING}: model.provider: expected a non-empty string; got ""',
            f"{PING}: model.context_length: expected a number of at least 1; got 0",
            f'{PING}: model.effort: expected one of low, medium, high, xhigh, max; got "extreme"',
        ],
    ),
    (
        "messaging options need enabled",
        None,
        agents_with(
            private_messaging={"include_referee": True, "peers": ["pong"], "max_per_round": 2}
        ),
        [
            f"{PING}: private_messaging.include_referee: needs private_messaging.enabled: true",
            f"{PING}: private_messaging.peers: needs private_messaging.enabled: true",
            f"{PING}: private_messaging.max_per_round: needs private_messaging.enabled: true",
            f"{PING}: private_messaging.max_per_round: is per round and needs a turns block "
            "in project.json",
        ],
    ),
    (
        "peers must be roster ids",
        project_with(turns={}),
        agents_with(
            private_messaging={
                "enabled": True,
                "peers": ["pong", "ghost", "ping"],
                "max_per_round": 2,
            }
        ),
        [
            f"{PING}: private_messaging.peers[1]: expected an agent id of the roster (ping, "
            'pong, umpire); got "ghost"',
            f'{PING}: private_messaging.peers[2]: expected another agent\'s id; got "ping"',
        ],
    ),
    (
        "max_per_round bound",
        project_with(turns={}),
        agents_with(private_messaging={"enabled": True, "max_per_round": 101}),
        [f"{PING}: private_messaging.max_per_round: expected a number of at most 100; got 101"],
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


def test_secret_is_never_echoed(tmp_path):
    key = "sk-proj-THISISSECRET0123456789"
    result = load(
        tmp_path,
        agents=agents_with(model={"provider": "openai", "model": "gpt", "api_key_ref": key}),
    )
    assert not result.ok
    assert key not in str(result.as_dict())


def test_unknown_grant_is_a_tool_problem_not_an_error(tmp_path):
    result = load(tmp_path, agents=agents_with(tools=["web_search"]))
    assert result.ok
    assert [str(p) for p in result.tool_problems] == [
        f"{PING}: tools[0]: web_search is not provided by this installation (available: web_fetch)"
    ]


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
