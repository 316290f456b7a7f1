"""``pit_agent PACKAGE AGENT``: one agent's runtime in this terminal, the operator playing the rest.

The agent is born as in a realm (same prompt, skills and model resolution) but without a
sandbox, a bus or realmtools: lines typed become the messages it receives and its replies are
printed. Its model calls go through a private Ledger gateway with a freshly minted, capped key.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from ledger.gateway.server import GatewayServer
from ledger.services.keys import MintError, mint_virtual_key, revoke_realm_keys
from ledger.services.profiles import (
    ProfileError,
    active_provider_name,
    get_profile,
    resolve_agent_model,
    seed_profiles,
)
from realms.packages import Project, load_package
from realms.plan import RealmPlan
from realms.services.birth import build_birth
from runtime.birth import BirthConfig
from runtime.standalone import run_in_terminal


def _load(package: Path, agent_id: str) -> Project:
    result = load_package(package)
    if not result.ok or result.project is None:
        lines = [f"  {error}" for error in result.errors]
        raise CommandError(f"{package}: the package does not load:\n" + "\n".join(lines))
    project = result.project
    if project.agent(agent_id) is None:
        known = ", ".join(a.id for a in project.agents)
        raise CommandError(f"{package}: no agent {agent_id!r} (agents: {known})")
    return project


def _standalone_birth(
    project: Project,
    agent_id: str,
    realm_id: str,
    secret: str,
    model: str,
    home: Path,
    context_length: int | None,
    cap_usd: float | None,
    socket: Path,
) -> BirthConfig:
    data = project.model_dump(mode="json")
    agent = project.agent(agent_id)
    assert agent is not None
    born = build_birth(
        realm_id=realm_id,
        plan=RealmPlan.parse(
            data,
            {
                "agents": [
                    {"id": agent_id, "context_length": context_length, "budget_usd": cap_usd}
                ],
                "require_mention": False,
                "referee_sees_all": agent.is_referee,
                "environment": {"shared_folder": False},
            },
        ),
        agent_id=agent_id,
        mxid=f"@{agent_id}:standalone",
        access_token="standalone",  # noqa: S106 - no bus in standalone mode; never used
        commons_room_id="!commons:standalone",
        dm_rooms={},
        users={a.id: f"@{a.id}:standalone" for a in project.agents},
        system_mxid="@system:standalone",
        operator_mxid="@operator:standalone",
        virtual_key=secret,
        model_name=model,
        realmtools_token=None,
    )
    assert born.prompt is not None
    state = home / ".bearpit"
    return born.model_copy(
        update={
            "bus": None,
            "model": born.model.model_copy(update={"socket_path": str(socket)}),
            "prompt": born.prompt.model_copy(update={"resources_dir": str(home / "resources")}),
            "workspace": str(home),
            "state_dir": str(state / "state"),
            "trace_path": str(state / "trace.jsonl"),
            "transcript_path": str(state / "transcript.jsonl"),
        }
    )


def _write_resources(project: Project, agent_id: str, home: Path) -> None:
    agent = project.agent(agent_id)
    assert agent is not None
    files = {**project.project_resources, **agent.resource_files}
    root = (home / "resources").resolve()
    for name, text in files.items():
        target = (root / name).resolve()
        if not target.is_relative_to(root):
            raise CommandError(f"resource {name!r}: escapes the resources folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


class Command(BaseCommand):
    help = "Run one agent of a package in this terminal; you play everyone else."
    stealth_options = ("stdin",)

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("package", type=Path, help="package folder")
        parser.add_argument("agent", help="the agent id to run")
        parser.add_argument("--provider", help="provider profile (default: the active one)")
        parser.add_argument(
            "--script", type=Path, help="a scripted-provider YAML script for the agent's key"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        package: Path = options["package"]
        agent_id: str = options["agent"]
        project = _load(package, agent_id)
        agent = project.agent(agent_id)
        assert agent is not None
        seed_profiles()
        try:
            profile = get_profile(options["provider"] or active_provider_name())
            resolved = resolve_agent_model(agent.model_dump(mode="json"), profile)
        except ProfileError as exc:
            raise CommandError(str(exc)) from exc
        script = options["script"].read_text(encoding="utf-8") if options["script"] else None
        realm_id = f"standalone-{secrets.token_hex(4)}"
        try:
            _, secret = mint_virtual_key(
                realm_id=realm_id,
                agent_id=agent_id,
                provider=resolved.provider,
                model=resolved.model,
                cap_usd=resolved.cap_usd,
                on_exhausted=resolved.on_exhausted,
                credential_handle=resolved.credential_handle or None,
                script=script,
                input_cost_per_token=resolved.input_cost_per_token,
                output_cost_per_token=resolved.output_cost_per_token,
                effort=resolved.effort,
                context_length=resolved.context_length,
            )
        except MintError as exc:
            raise CommandError(str(exc)) from exc
        base = Path(settings.BEARPIT_HOME) / "standalone" / realm_id
        home = base / agent_id
        _write_resources(project, agent_id, home)
        socket = Path(settings.BEARPIT_HOME) / "run" / f"{realm_id}.sock"
        config = _standalone_birth(
            project,
            agent_id,
            realm_id,
            secret,
            resolved.model,
            home,
            resolved.context_length,
            None if resolved.cap_usd is None else float(resolved.cap_usd),
            socket,
        )
        gateway = GatewayServer(uds_path=socket).start()
        self.stdout.write(
            f"{agent_id} of {project.metadata.name} on {resolved.provider}/{resolved.model}; "
            f"trace in {config.trace_path}"
        )
        try:
            asyncio.run(run_in_terminal(config, options.get("stdin") or sys.stdin, self.stdout))
        finally:
            gateway.stop()
            revoke_realm_keys(realm_id)
