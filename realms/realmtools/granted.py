"""Granted tools: per-agent extras (``web_fetch`` …) brokered on the host.

A granted tool is offered only to agents holding its grant, under the realm's
``spec.tools.<name>`` policy. Every call is chronicled as TOOL_CALL and
TOOL_RESULT; quotas count the TOOL_CALL events already written.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from django.conf import settings

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from realms.packages.tools import GRANTABLE_TOOLS, REALMTOOLS_VERBS
from realms.realmtools import webfetch
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal

Handler = Callable[[Caller, Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class GrantedTool:
    name: str
    description: str
    params: dict[str, Any]
    handler: Handler
    cost_per_call_usd: float = 0.0


_REGISTRY: dict[str, GrantedTool] = {}


def register(tool: GrantedTool) -> None:
    if tool.name in REALMTOOLS_VERBS:
        raise ValueError(f"{tool.name!r} is a realmtools verb; a granted tool cannot take it")
    _REGISTRY[tool.name] = tool


def get(name: str) -> GrantedTool | None:
    return _REGISTRY.get(name)


def names() -> list[str]:
    return sorted(_REGISTRY)


def quota(policy: Mapping[str, Any], agent_id: str) -> int | None:
    by_agent = policy.get("max_calls_by_agent") or {}
    if agent_id in by_agent:
        return int(by_agent[agent_id])
    limit = policy.get("max_calls_per_agent")
    return None if limit is None else int(limit)


def calls_made(realm_id: str, agent_id: str, tool: str) -> int:
    return sum(
        1
        for p in Event.objects.filter(realm_id=realm_id, kind=Kind.TOOL_CALL).values_list(
            "payload", flat=True
        )
        if p.get("agent") == agent_id and p.get("tool") == tool
    )


def call(caller: Caller, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    tool = _REGISTRY.get(name)
    if tool is None:
        raise Refusal(f"no granted tool named {name!r}")
    try:
        jsonschema.validate(dict(args), tool.params)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "arguments"
        raise Refusal(f"{name}: {where}: {exc.message}") from None
    policy = caller.facts.tool_policy.get(name) or {}
    call_id = secrets.token_hex(8)
    with realm_lock(caller.realm_id):
        limit = quota(policy, caller.agent_id)
        used = calls_made(caller.realm_id, caller.agent_id, name)
        if limit is not None and used >= limit:
            raise Refusal(f"{name} quota used up: {used} of {limit} calls in this realm")
        record_event(
            caller.realm_id,
            Kind.TOOL_CALL,
            {"id": call_id, "agent": caller.agent_id, "tool": name, "args": dict(args)},
        )
    base = {"id": call_id, "agent": caller.agent_id, "tool": name}
    try:
        result = tool.handler(caller, args, policy)
    except Refusal as refusal:
        record_event(
            caller.realm_id,
            Kind.TOOL_RESULT,
            {**base, "ok": False, "error": refusal.message, "cost_usd": tool.cost_per_call_usd},
        )
        raise
    summary = {k: v for k, v in result.items() if k != "text"}
    record_event(
        caller.realm_id,
        Kind.TOOL_RESULT,
        {**base, "ok": True, "result": summary, "cost_usd": tool.cost_per_call_usd},
    )
    return result


def _web_fetch(
    caller: Caller, args: Mapping[str, Any], policy: Mapping[str, Any]
) -> dict[str, Any]:
    return webfetch.fetch(
        str(args["url"]),
        allow=[str(p) for p in policy.get("allow") or []],
        contains=str(args["contains"]) if args.get("contains") else None,
        policy=webfetch.policy_allowing(settings.BEARPIT_WEB_FETCH_ALLOW_ADDRESSES),
    )


_WEB = GRANTABLE_TOOLS["web_fetch"]
register(
    GrantedTool(
        name=_WEB.name,
        description=_WEB.description,
        params=_WEB.params,
        handler=_web_fetch,
        cost_per_call_usd=_WEB.cost_per_call_usd,
    )
)
