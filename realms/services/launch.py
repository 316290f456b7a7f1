"""Launch: turn a package (or a stored snapshot) into a pending realm.

Binds parameters, resolves each agent's model from its tier and the provider
profile, snapshots the resolved project on the ``Realm`` row, creates the
``RealmAgent`` rows and the Warden's state, and chronicles TOOL_MANIFEST (and
MACHINE for a state-machine realm) before anything is provisioned. Bad input
raises ``LaunchError`` with every problem listed and changes nothing.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import transaction

from chronicle.kinds import Kind
from chronicle.services import record_event
from ledger.services.profiles import (
    Profile,
    ProfileError,
    ResolvedModel,
    floor_silence_timeout,
    get_profile,
    resolve_agent_model,
)
from realms.ids import is_realm_id
from realms.models import Realm, RealmAgent
from realms.packages.parameters import (
    ParameterBindingError,
    bind_parameters,
    missing_parameters,
    scan_parameters,
    validate_parameter_values,
)
from realms.packages.schema.project import Project
from realms.packages.tools import GRANTABLE_TOOLS, canonical_tool_name
from realms.plan import referee_of, role_skill
from realms.services.errors import LaunchError as LaunchError  # re-exported: callers catch it here
from realms.services.providers import ProviderChoice, choose_provider
from realms.warden.state import create_state

_SLUG_RUN = re.compile(r"[^a-z0-9-]+")


def realm_slug(name: str) -> str:
    """Lower-case, runs of anything but ``[a-z0-9-]`` become ``-`` (trimmed)."""
    slug = _SLUG_RUN.sub("-", name.lower()).strip("-")
    return slug[:60] or "realm"


def new_realm_id(name: str) -> str:
    return f"{realm_slug(name)}-{secrets.token_hex(3)}"


@dataclass
class LaunchOptions:
    realm_id: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    allow_missing_parameters: bool = False
    free_response: bool = False
    provider: str | None = None
    allow_provider_fallback: bool = False
    turns_override: dict[str, Any] | None = None
    choice: ProviderChoice | None = None
    """A provider already chosen (and reported) by the caller; wins over ``provider``."""


def load_project(path: Path) -> tuple[Project, Path]:
    """Load and validate a package folder or manifest file, or raise LaunchError."""
    from realms.packages import load_package

    result = load_package(path)
    if not result.ok or result.project is None:
        raise LaunchError([str(e) for e in result.errors] or [f"{path}: not a valid package"])
    return result.project, Path(path)


def launch_realm(path: Path | str, options: LaunchOptions | None = None) -> Realm:
    """Load the package at ``path``, bind its parameters and create a pending realm."""
    opts = options or LaunchOptions()
    project, where = load_project(Path(path))
    params, param_errors = scan_parameters(project)
    problems = [str(e) for e in param_errors]
    problems += validate_parameter_values(params, opts.parameters)
    missing = missing_parameters(params, opts.parameters)
    if missing and not opts.allow_missing_parameters:
        problems.append(
            "required parameters have no value: "
            + ", ".join(p.name for p in missing)
            + " (give -p NAME=VALUE, or consent with --yes)"
        )
    if problems:
        raise LaunchError(problems, missing=[p.as_dict() for p in missing])
    try:
        bound = bind_parameters(project, opts.parameters)
    except ParameterBindingError as exc:
        raise LaunchError([str(e) for e in exc.errors]) from exc
    values = {p.name: opts.parameters.get(p.name) or (p.default or "") for p in params}
    return create_realm(bound, opts, package=str(where.resolve()), parameters=values)


def launch_snapshot(
    snapshot: Mapping[str, Any], options: LaunchOptions, *, package: str, parameters: dict[str, str]
) -> Realm:
    """Replay a stored resolved project (``pit_rerun`` in snapshot mode)."""
    project = Project.model_validate(dict(snapshot))
    return create_realm(project, options, package=package, parameters=parameters)


def create_realm(
    project: Project, opts: LaunchOptions, *, package: str, parameters: dict[str, str]
) -> Realm:
    choice = opts.choice or choose_provider(
        opts.provider, allow_fallback=opts.allow_provider_fallback
    )
    try:
        profile = get_profile(choice.name)
    except ProfileError as exc:
        raise LaunchError([str(exc)]) from exc
    problems = _grant_problems(project)
    resolved: dict[str, ResolvedModel] = {}
    for agent in project.agents:
        try:
            resolved[agent.id] = resolve_agent_model(agent.model_dump(mode="json"), profile)
        except (ProfileError, KeyError, ValueError) as exc:
            problems.append(f"agents/{agent.id}/agent.json: model: {exc}")
    realm_id = opts.realm_id or new_realm_id(project.metadata.name)
    if not is_realm_id(realm_id):
        problems.append(f"realm id {realm_id!r}: use lower-case letters, digits and '-'")
    elif Realm.objects.filter(realm_id=realm_id).exists():
        problems.append(f"realm id {realm_id!r} is already taken")
    if problems:
        raise LaunchError(problems)
    snapshot = project.snapshot()
    turns = _resolved_turns(snapshot["spec"].get("turns"), opts.turns_override, profile)
    snapshot["spec"]["turns"] = turns
    run_config = build_run_config(
        snapshot,
        resolved,
        choice=choice,
        parameters=parameters,
        package=package,
        free_response=opts.free_response,
    )
    return _create_rows(realm_id, snapshot, run_config, resolved, package=package)


def _grant_problems(project: Project) -> list[str]:
    out: list[str] = []
    for agent in project.agents:
        for tool in agent.tools:
            if canonical_tool_name(tool) not in GRANTABLE_TOOLS:
                out.append(f"agents/{agent.id}/agent.json: tools: {tool!r} is not installed")
    return out


def _resolved_turns(
    turns: Mapping[str, Any] | None, override: Mapping[str, Any] | None, profile: Profile
) -> dict[str, Any] | None:
    if override is not None:
        if not override.get("enabled", True):
            return None
        base = dict(turns or {})
        if "silence_timeout_s" in override:
            base["silence_timeout_s"] = float(override["silence_timeout_s"])
        turns = base
    if turns is None:
        return None
    out = dict(turns)
    out.setdefault("silence_timeout_s", 90.0)
    out["silence_timeout_s"] = floor_silence_timeout(float(out["silence_timeout_s"]), profile)
    return out


def realmtools_wired(spec: Mapping[str, Any], agents: list[Mapping[str, Any]]) -> bool:
    """Realmtools are wired when tools are provided and something needs them (§3.1)."""
    if not spec.get("provide_tools", True):
        return False
    return bool(
        spec.get("mechanics")
        or spec.get("turns")
        or referee_of((a["id"], a.get("role")) for a in agents) is not None
        or any((a.get("private_messaging") or {}).get("enabled") for a in agents)
        # Granted tools are served through realmtools, as the package's own check says.
        or any(a.get("tools") for a in agents)
    )


def _referee_sees_all(
    spec: Mapping[str, Any], referee: str | None, turns: Any, require_mention: bool
) -> bool:
    """Whether the referee receives every Commons message (format §3.2).

    ``require_mention: false`` ungates everybody. Otherwise a turns realm's referee is
    gated because its round cue carries the round's messages, and a state-machine
    realm's referee is gated because the machine wakes it: even with
    ``referee_reads_commons`` it pulls the floor with ``table_talk`` when it chooses,
    so players' chatter never spends its model calls.
    """
    if referee is None:
        return False
    if not require_mention:
        return True
    machine_realm = any(m.get("kind") == "state-machine" for m in spec.get("mechanics") or [])
    return turns is None and not machine_realm


def _money(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def build_run_config(
    snapshot: Mapping[str, Any],
    resolved: Mapping[str, ResolvedModel],
    *,
    choice: ProviderChoice,
    parameters: Mapping[str, str],
    package: str,
    free_response: bool,
) -> dict[str, Any]:
    """The resolved configuration recorded on the ``running`` event (format §6.3)."""
    spec = snapshot["spec"]
    env = spec.get("environment") or {}
    agents: list[Mapping[str, Any]] = snapshot.get("agents") or []
    referee = referee_of((a["id"], a.get("role")) for a in agents)
    turns = spec.get("turns")
    require_mention = bool(env.get("require_mention", True)) and not free_response
    agent_rows = []
    for a in agents:
        r = resolved[a["id"]]
        basics = role_skill(a.get("role"))
        skills = [f"builtin:{basics}"] + [
            f"{s['source']}:{s['ref']}"
            for s in a.get("skills") or []
            if not (s["source"] == "builtin" and s["ref"] == basics)
        ]
        powers = a.get("powers") or {}
        agent_rows.append(
            {
                "id": a["id"],
                "role": a.get("role", "participant"),
                "model_category": a.get("model_category", "medium"),
                "model": r.model,
                "effort": r.effort,
                "provider": r.provider,
                "context_length": r.context_length,
                "tool_mode": r.tool_mode,
                "max_output_tokens": r.max_output_tokens,
                "budget_usd": _money(r.cap_usd),
                "on_exhausted": r.on_exhausted,
                "skills": skills,
                "private_messaging": a.get("private_messaging") or {},
                "verdict_ends_realm": bool(powers.get("verdict_ends_realm")),
            }
        )
    return {
        "provider": choice.name,
        "provider_fallback": choice.fallback,
        "parameters": dict(parameters),
        "package": package,
        "turns": turns,
        "free_response": free_response,
        "require_mention": require_mention,
        "referee_sees_all": _referee_sees_all(spec, referee, turns, require_mention),
        "referee_opens": bool(spec.get("referee_opens")),
        "stall_nudge": bool(spec.get("stall_nudge", True)),
        "provide_tools": bool(spec.get("provide_tools", True)),
        "realmtools": realmtools_wired(spec, agents),
        "environment": {
            "network_egress": env.get("network_egress", "model_only"),
            "shared_folder": bool((env.get("shared_folder") or {}).get("enabled")),
            "allow_side_channels": bool(env.get("allow_side_channels", True)),
        },
        "mechanics": [
            {"kind": m.get("kind"), "ruleset": m.get("ruleset")}
            for m in spec.get("mechanics") or []
        ],
        "termination": [
            {k: t.get(k) for k in ("type", "limit", "channel", "pattern", "path", "count")}
            for t in spec.get("termination") or []
        ],
        "referee": referee,
        "agents": agent_rows,
    }


def tool_manifest(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """TOOL_MANIFEST: every granted tool, whether it is available, and who holds it."""
    policy = snapshot["spec"].get("tools") or {}
    grants: dict[str, list[str]] = {}
    tools: dict[str, Any] = {}
    for a in snapshot.get("agents") or []:
        names = sorted({canonical_tool_name(t) for t in a.get("tools") or []})
        grants[a["id"]] = names
        for name in names:
            tool = GRANTABLE_TOOLS.get(name)
            if tool is None:
                tools[name] = {
                    "available": False,
                    "policy": policy.get(name, {}),
                    "reason": "not installed",
                }
            else:
                tools[name] = {
                    "available": True,
                    "description": tool.description,
                    "params": tool.params,
                    "policy": policy.get(name, {}),
                    "cost_per_call_usd": tool.cost_per_call_usd,
                }
    return {"version": 1, "tools": tools, "grants": grants}


def machine_declaration(snapshot: Mapping[str, Any]) -> dict[str, Any] | None:
    """MACHINE: the declared state machine with its roles resolved to members."""
    mechanics = snapshot["spec"].get("mechanics") or []
    machine = next((m.get("machine") for m in mechanics if m.get("kind") == "state-machine"), None)
    if not machine:
        return None
    agents = snapshot.get("agents") or []
    roster = [a["id"] for a in agents]
    referee = referee_of((a["id"], a.get("role")) for a in agents)
    members: dict[str, list[str]] = {}
    for role, spec in (machine.get("roles") or {}).items():
        who = spec.get("members")
        if who == "referee":
            members[role] = [referee] if referee else []
        elif who == "participants":
            members[role] = [a for a in roster if a != referee]
        else:
            members[role] = [str(x) for x in who or []]
    return {
        "version": 1,
        "declaration": machine,
        "members": members,
        "roster": roster,
        "referee": referee,
    }


@transaction.atomic
def _create_rows(
    realm_id: str,
    snapshot: dict[str, Any],
    run_config: dict[str, Any],
    resolved: Mapping[str, ResolvedModel],
    *,
    package: str,
) -> Realm:
    realm = Realm.objects.create(
        realm_id=realm_id,
        package_name=str(snapshot["metadata"]["name"]),
        package_path=package,
        project=snapshot,
        parameters=run_config["parameters"],
        run_config=run_config,
        provider=run_config["provider"],
        state=Realm.State.PENDING,
    )
    for position, agent in enumerate(snapshot.get("agents") or []):
        r = resolved[agent["id"]]
        RealmAgent.objects.create(
            realm=realm,
            agent_id=agent["id"],
            position=position,
            role=agent.get("role", "participant"),
            name=agent.get("name") or "",
            model=r.model,
            provider=r.provider,
            budget_usd=r.cap_usd,
            on_exhausted=r.on_exhausted,
        )
    create_state(realm)
    record_event(realm_id, Kind.TOOL_MANIFEST, tool_manifest(snapshot))
    machine = machine_declaration(snapshot)
    if machine is not None:
        record_event(realm_id, Kind.MACHINE, machine)
    return realm
