"""Birth configs: what each agent's runtime is told once, at start (format §3.1).

Paths and socket addresses are written as the sandbox sees them: the home at
``/home/agent``, the platform's sockets under ``/run/bearpit``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from realms.plan import PlanAgent, RealmPlan
from realms.skills import builtin as builtin_skills
from realms.skills.skillfile import SkillFileError, parse
from runtime.birth import (
    BirthConfig,
    BusSettings,
    McpServerSettings,
    ModelSettings,
    PromptInputs,
    RosterEntry,
    Skill,
)

SANDBOX_HOME = "/home/agent"
SANDBOX_SOCKETS = "/run/bearpit"
SANDBOX_SHARED = "/realm/shared"
STATE_DIR = f"{SANDBOX_HOME}/.bearpit"
TRACE_FILE = "trace.jsonl"


def _skills(agent: PlanAgent, realm_plan: RealmPlan) -> list[Skill]:
    # The role's built-in skill first, then the agent's own in the order it lists them
    # (user skills were copied into local_skills by the loader), then the package's.
    role_skill = agent.role_skill
    out = [Skill(name=role_skill, text=builtin_skills.text(role_skill))]
    for ref in agent.skills:
        source, name = ref.source, ref.ref
        if source == "builtin" and name != role_skill and name in builtin_skills.names():
            out.append(Skill(name=name, text=builtin_skills.text(name)))
        elif source in ("local", "user"):
            text = agent.local_skills.get(name)
            if text:
                out.append(Skill(name=name, text=text))
    for name, text in sorted(realm_plan.project_skills.items()):
        out.append(Skill(name=name, text=text))
    if agent.skills_mode == "on_demand":
        # The role's skill stays inline: it is how the apparatus works, needed at once.
        out = out[:1] + [_on_demand(skill) for skill in out[1:]]
    return out


def _on_demand(skill: Skill) -> Skill:
    """A skill named in the first prompt with its front matter's description, its text
    served by load_skill."""
    try:
        doc = parse(skill.text, default_name=skill.name)
    except SkillFileError:
        return Skill(name=skill.name, text=skill.text, on_demand=True)
    if skill.name in builtin_skills.names() and not doc.description:
        doc = builtin_skills.doc(skill.name)
    return Skill(name=skill.name, text=doc.body, description=doc.description, on_demand=True)


def _tool_mode(mode: str) -> Literal["native", "json", "auto"]:
    if mode == "json":
        return "json"
    if mode == "auto":
        return "auto"
    return "native"


def _budget_note(cap_usd: float | None) -> str | None:
    if cap_usd is None:
        return None
    return (
        f"your model spend is capped at ${cap_usd:.2f}; when it is spent your model calls "
        "fail. Be brief."
    )


def build_birth(
    *,
    realm_id: str,
    plan: RealmPlan,
    agent_id: str,
    mxid: str,
    access_token: str,
    commons_room_id: str,
    dm_rooms: Mapping[str, str],
    users: Mapping[str, str],
    system_mxid: str,
    operator_mxid: str,
    virtual_key: str,
    model_name: str,
    realmtools_token: str | None,
) -> BirthConfig:
    """The birth config of one agent of a provisioned realm."""
    agent = plan.agent(agent_id)
    if agent is None:
        raise KeyError(f"realm {realm_id}: no agent {agent_id!r}")
    is_referee = agent.is_referee
    require_mention = plan.require_mention
    sees_all = is_referee and plan.referee_sees_all
    shared = SANDBOX_SHARED if plan.environment.shared_folder else None
    resources = sorted(set(plan.project_resources) | set(agent.resource_files))
    mcp = []
    if realmtools_token is not None:
        mcp.append(
            McpServerSettings(
                name="realmtools",
                url="http://realmtools/mcp",
                socket_path=f"{SANDBOX_SOCKETS}/realmtools.sock",
                bearer_token=realmtools_token,
            )
        )
    return BirthConfig(
        run_id=realm_id,
        agent_id=agent_id,
        model=ModelSettings(
            base_url="http://gateway/v1",
            socket_path=f"{SANDBOX_SOCKETS}/gateway.sock",
            api_key=virtual_key,
            name=model_name,
            context_length=max(1024, agent.context_length or 128_000),
            tool_mode=_tool_mode(agent.tool_mode),
            **(
                {"max_output_tokens": agent.max_output_tokens}
                if agent.max_output_tokens is not None
                else {}
            ),
        ),
        bus=BusSettings(
            homeserver_url="http://homeserver",
            socket_path=f"{SANDBOX_SOCKETS}/homeserver.sock",
            mxid=mxid,
            access_token=access_token,
            commons_room_id=commons_room_id,
            dm_rooms=dict(dm_rooms),
            system_mxid=system_mxid,
            operator_mxid=operator_mxid,
            peers=dict(users),
            require_mention=require_mention and not sees_all,
            referee_sees_all=sees_all,
        ),
        mcp_servers=mcp,
        skills=_skills(agent, plan),
        prompt=PromptInputs(
            agent_id=agent_id,
            display_name=agent.name,
            mxid=mxid,
            role="referee" if is_referee else "participant",
            persona=agent.persona,
            rubric=agent.rubric if is_referee else None,
            roster=[
                RosterEntry(
                    id=a.id,
                    name=a.name,
                    role="referee" if a.is_referee else "participant",
                    description=a.description,
                )
                for a in plan.agents
            ],
            commons_room="Realm Commons",
            dm_peers=sorted(dm_rooms),
            require_mention=require_mention,
            sees_all=sees_all or not require_mention,
            realm_goals=list(plan.goals),
            goals=list(agent.goals),
            responsibilities=list(agent.responsibilities),
            resources=resources,
            resources_dir=f"{SANDBOX_HOME}/resources",
            shared_folder=shared,
            guidelines=plan.guidelines,
            restrictions=plan.restrictions,
            budget_note=_budget_note(agent.budget_usd),
            realmtools=realmtools_token is not None,
        ),
        workspace=SANDBOX_HOME,
        state_dir=f"{STATE_DIR}/state",
        trace_path=f"{STATE_DIR}/{TRACE_FILE}",
        transcript_path=f"{STATE_DIR}/transcript.jsonl",
    )
