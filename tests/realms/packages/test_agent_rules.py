"""Rules of agent.json, each asserting the exact located message."""

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


AGENT_CASES = [
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
        [
            f"{PING}: skills[0].source: expected builtin, local or user "
            '(gh is not implemented); got "gh"'
        ],
    ),
    (
        "unknown builtin skill",
        None,
        agents_with(skills=[{"source": "builtin", "ref": "chess-master"}]),
        [
            f"{PING}: skills[0].ref: expected a built-in skill (agent-basics, collaborator, "
            "competitor, referee-basics, referee-progress, referee-scorekeeper, "
            'referee-social-deduction, social-deduction); got "chess-master"'
        ],
    ),
    (
        "skill source enum",
        None,
        agents_with(skills=[{"source": "web", "ref": "x"}]),
        [f'{PING}: skills[0].source: expected one of builtin, local, user, gh; got "web"'],
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
    [case[1:] for case in AGENT_CASES],
    ids=[case[0] for case in AGENT_CASES],
)
def test_agent_rule(tmp_path, project, agents, expected):
    result = load(tmp_path, project=project, agents=agents)
    assert messages(result) == expected
    assert not result.ok and result.project is None


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
