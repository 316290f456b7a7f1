"""Each agent's first model request, built the way its runtime builds it, and counted the
way the gateway counts it.

The runtime's first request is its system prompt (rendered from the birth config and the
names of the tools it was offered), the kickoff that wakes it, wrapped in the envelope
of incoming events, and the schemas of its tools. Here the birth config comes from the
same ``build_birth`` provisioning uses, the prompt and the envelope from the runtime's
own renderers, the tools from the runtime's built-in file tools and, when the realm has
them, the realmtools server's own listing for that agent. Identities (bus ids, room ids)
have the shapes provisioning gives them, so their tokens count the same.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from ledger.tokens import count_messages
from realms.herald.localparts import agent_localpart
from realms.herald.posting import message_content
from realms.plan import PlanAgent, RealmPlan
from realms.realmtools import catalogue
from realms.realmtools.context import Caller
from realms.realmtools.facts import load_facts
from realms.realmtools.identity import Identity
from realms.services.birth import build_birth
from realms.services.kickoff import kickoff_mentions, kickoff_text
from runtime.filetools import file_tools
from runtime.prompt import IncomingEvent, envelope, system_prompt
from runtime.tools import ToolDefinition, ToolRegistry

# Stand-ins of the length provisioning's values have (a Matrix room id, an access token,
# a virtual key); none of them is ever sent anywhere.
_ROOM = "!" + "r" * 18 + ":{server}"
_SECRET = "x" * 40
_CLOCK = "2000-01-01 00:00:00 UTC"
_SOURCE = "mcp:realmtools"


@dataclass(frozen=True)
class FirstRequest:
    agent_id: str
    tokens: int
    tools: list[str]
    messages: list[dict[str, Any]]


async def _no_handler(arguments: dict[str, Any]) -> Any:  # never called: a listing only
    raise RuntimeError("forecast tools are not callable")


def _realmtools(realm_id: str, plan: RealmPlan, agent: PlanAgent) -> list[ToolDefinition]:
    from mcp.server.fastmcp import FastMCP

    from realms.realmtools import granted
    from realms.realmtools.server import build_mcp

    identity = Identity(
        realm_id=realm_id,
        agent_id=agent.id,
        role="referee" if agent.is_referee else "player",
        roster=tuple(plan.participants),
        grants=frozenset(agent.tools),
    )
    allowed = set(catalogue.visible_names(Caller(identity, load_facts(realm_id))))
    mcp = build_mcp()
    listed = asyncio.run(FastMCP.list_tools(mcp))  # the unfiltered listing
    defs = [
        ToolDefinition(
            t.name,
            t.description or t.name,
            t.inputSchema or {"type": "object"},
            _no_handler,
            source=_SOURCE,
        )
        for t in listed
        if t.name in allowed
    ]
    for name in granted.names():
        tool = granted.get(name)
        if tool is not None and name in allowed:
            defs.append(
                ToolDefinition(name, tool.description, tool.params, _no_handler, source=_SOURCE)
            )
    return defs


def first_request(realm_id: str, plan: RealmPlan, agent_id: str, model: str) -> FirstRequest:
    """The first request ``agent_id`` sends for the kickoff of a (launched) realm."""
    server = settings.BEARPIT_MATRIX_SERVER_NAME
    agent = plan.agent(agent_id)
    assert agent is not None
    users = {a.id: f"@{agent_localpart(realm_id, a.id)}:{server}" for a in plan.agents}
    birth = build_birth(
        realm_id=realm_id,
        plan=plan,
        agent_id=agent_id,
        mxid=users[agent_id],
        access_token=_SECRET,
        commons_room_id=_ROOM.format(server=server),
        dm_rooms={peer: _ROOM.format(server=server) for peer in plan.dm_partners(agent_id)},
        users=users,
        system_mxid=f"@{agent_localpart(realm_id, 'system')}:{server}",
        operator_mxid=f"@{agent_localpart(realm_id, 'operator')}:{server}",
        virtual_key=_SECRET,
        model_name=model,
        realmtools_token=_SECRET if plan.realmtools else None,
    )
    with tempfile.TemporaryDirectory(prefix="bearpit-forecast-") as workspace:
        registry = ToolRegistry(birth.tools_allow, birth.limits.tool_timeout_s)
        for tool in file_tools(Path(workspace)):
            registry.add_builtin(tool)
        if plan.realmtools:
            registry.replace_source("realmtools", _realmtools(realm_id, plan, agent))
        prompt = system_prompt(birth, registry.names(), [])
        schemas = registry.schemas()
        names = registry.names()
    kickoff = IncomingEvent(
        kind="message",
        sender="system",
        room="Commons",
        room_id=_ROOM.format(server=server),
        # As the Warden posts it: the mentioned agents' ids lead the text.
        body=message_content(kickoff_text(plan), [users[a] for a in kickoff_mentions(plan)])[
            "body"
        ],
        time=_CLOCK,
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompt},
        {"role": "user", "content": envelope([kickoff])},
    ]
    return FirstRequest(agent_id, count_messages(messages, schemas or None), names, messages)
