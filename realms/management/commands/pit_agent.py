"""``pit_agent``: an agent's runtime in this terminal.

* ``pit_agent PACKAGE AGENT``: one agent of a package, the operator playing the rest. It is
  born as in a realm (same prompt, skills and model resolution) but without a sandbox, a bus
  or realmtools: lines typed become the messages it receives and its replies are printed.
* ``pit_agent --workspace DIR``: no package; a small coding agent over the folder DIR
  (``runtime/workspace``), against any OpenAI-compatible endpoint (``--api-base``,
  ``--model``, the key from ``--api-key`` or an environment variable) or a provider profile.

Through a profile, model calls go through a private Ledger gateway with a freshly minted,
capped key, revoked at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sys
from argparse import ArgumentParser
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from realms.packages import Project, load_package
from realms.plan import RealmPlan
from realms.services.birth import build_birth
from runtime.birth import BirthConfig, Limits, ModelSettings
from runtime.record import RecordError
from runtime.standalone import run_in_terminal
from runtime.workspace.config import WorkspaceError, load_settings
from runtime.workspace.session import run_workspace

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


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


@dataclass(frozen=True)
class PrivateGateway:
    """A minted key on a gateway of this process's own (a Unix socket under BEARPIT_HOME)."""

    realm_id: str
    secret: str
    socket: Path
    model: str
    provider: str
    context_length: int | None
    cap_usd: float | None


@contextlib.contextmanager
def private_gateway(
    agent: dict[str, Any], agent_id: str, provider: str | None, script: Path | None
) -> Iterator[PrivateGateway]:
    """Resolve ``agent``'s model on the profile, mint its key, serve a gateway; undo all."""
    # Imported here: the gateway and the ledger's services (LiteLLM) take seconds to
    # import, which a workspace agent on its own endpoint never needs.
    from ledger.gateway.server import GatewayServer
    from ledger.services.keys import MintError, mint_virtual_key, revoke_realm_keys
    from ledger.services.profiles import (
        ProfileError,
        active_provider_name,
        get_profile,
        resolve_agent_model,
        seed_profiles,
    )

    seed_profiles()
    try:
        profile = get_profile(provider or active_provider_name())
        resolved = resolve_agent_model(agent, profile)
    except ProfileError as exc:
        raise CommandError(str(exc)) from exc
    script_text = script.read_text(encoding="utf-8") if script else None
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
            script=script_text,
            input_cost_per_token=resolved.input_cost_per_token,
            output_cost_per_token=resolved.output_cost_per_token,
            effort=resolved.effort,
            context_length=resolved.context_length,
        )
    except MintError as exc:
        raise CommandError(str(exc)) from exc
    socket = Path(settings.BEARPIT_HOME) / "run" / f"{realm_id}.sock"
    gateway = GatewayServer(uds_path=socket).start()
    try:
        yield PrivateGateway(
            realm_id=realm_id,
            secret=secret,
            socket=socket,
            model=resolved.model,
            provider=resolved.provider,
            context_length=resolved.context_length,
            cap_usd=None if resolved.cap_usd is None else float(resolved.cap_usd),
        )
    finally:
        gateway.stop()
        revoke_realm_keys(realm_id)


class Command(BaseCommand):
    help = (
        "Run one agent of a package in this terminal (you play everyone else), or with "
        "--workspace DIR a coding agent over a folder."
    )
    stealth_options = ("stdin",)
    # A terminal session, not a server: the platform's checks (URLs, API schema) only
    # slow its start.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("package", type=Path, nargs="?", help="package folder")
        parser.add_argument("agent", nargs="?", help="the agent id to run")
        parser.add_argument("--provider", help="provider profile (default: the active one)")
        parser.add_argument(
            "--script", type=Path, help="a scripted-provider YAML script for the agent's key"
        )
        ws = parser.add_argument_group("workspace agent (no package)")
        ws.add_argument("--workspace", type=Path, help="the folder the coding agent works in")
        ws.add_argument(
            "--config", type=Path, help="settings file (default DIR/.bearpit/config.json)"
        )
        ws.add_argument("--api-base", help="an OpenAI-compatible base URL, e.g. http://host/v1")
        ws.add_argument("--model", help="the model name at --api-base")
        ws.add_argument(
            "--api-key",
            help=f"the endpoint's key (better: set it in ${DEFAULT_KEY_ENV} or --api-key-env)",
        )
        ws.add_argument(
            "--api-key-env",
            default=DEFAULT_KEY_ENV,
            help=f"environment variable holding the key (default {DEFAULT_KEY_ENV})",
        )
        ws.add_argument("--tier", help="with a provider profile: the model tier (default medium)")
        ws.add_argument("--context-length", type=int, help="the model's window in tokens")
        ws.add_argument(
            "--tool-mode",
            choices=["native", "json", "auto"],
            default="native",
            help="how tools are offered to the model (json for models without tool calling)",
        )
        ws.add_argument(
            "--continue",
            dest="resume",
            action="store_true",
            help="go on with the workspace's last conversation",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["workspace"] is not None:
            if options["package"] is not None:
                raise CommandError("give either PACKAGE AGENT or --workspace DIR, not both")
            self._workspace(options)
            return
        if options["package"] is None or options["agent"] is None:
            raise CommandError("give PACKAGE AGENT, or --workspace DIR")
        self._package(options)

    def _workspace(self, options: dict[str, Any]) -> None:
        root: Path = options["workspace"].expanduser().resolve()
        if not root.is_dir():
            raise CommandError(f"--workspace {options['workspace']}: not a folder")
        try:
            ws_settings = load_settings(root, options["config"])
        except WorkspaceError as exc:
            raise CommandError(str(exc)) from exc
        stdin = options.get("stdin") or sys.stdin
        stdout = options.get("stdout") or sys.stdout
        extra: dict[str, Any] = {"tool_mode": options["tool_mode"]}
        if options["context_length"]:
            extra["context_length"] = options["context_length"]
        if options["api_base"]:
            if not options["model"]:
                raise CommandError("--api-base needs --model")
            key = options["api_key"] or os.environ.get(options["api_key_env"], "")
            if not key:
                raise CommandError(
                    f"no API key: set ${options['api_key_env']} (or pass --api-key); "
                    "for a keyless local server any placeholder will do"
                )
            model = self._model(
                base_url=options["api_base"], api_key=key, name=options["model"], **extra
            )
            # An endpoint that does not answer is reported at once, not waited for.
            asyncio.run(
                run_workspace(
                    root,
                    ws_settings,
                    model,
                    stdin,
                    stdout,
                    resume=options["resume"],
                    limits=Limits(gateway_wait_s=0),
                )
            )
            return
        agent = {"tier": options["tier"]} if options["tier"] else {}
        with private_gateway(agent, "agent", options["provider"], options["script"]) as gw:
            if gw.context_length and "context_length" not in extra:
                extra["context_length"] = gw.context_length
            model = self._model(
                base_url="http://gateway/v1",
                socket_path=str(gw.socket),
                api_key=gw.secret,
                name=gw.model,
                **extra,
            )
            asyncio.run(
                run_workspace(
                    root,
                    ws_settings,
                    model,
                    stdin,
                    stdout,
                    resume=options["resume"],
                    limits=Limits(gateway_wait_s=10),
                )
            )

    @staticmethod
    def _model(**fields: Any) -> ModelSettings:
        try:
            return ModelSettings(**fields)
        except RecordError as exc:
            raise CommandError(f"model settings: {exc}") from exc

    def _package(self, options: dict[str, Any]) -> None:
        package: Path = options["package"]
        agent_id: str = options["agent"]
        project = _load(package, agent_id)
        agent = project.agent(agent_id)
        assert agent is not None
        base_options = agent.model_dump(mode="json")
        with private_gateway(base_options, agent_id, options["provider"], options["script"]) as gw:
            home = Path(settings.BEARPIT_HOME) / "standalone" / gw.realm_id / agent_id
            _write_resources(project, agent_id, home)
            config = _standalone_birth(
                project,
                agent_id,
                gw.realm_id,
                gw.secret,
                gw.model,
                home,
                gw.context_length,
                gw.cap_usd,
                gw.socket,
            )
            self.stdout.write(
                f"{agent_id} of {project.metadata.name} on {gw.provider}/{gw.model}; "
                f"trace in {config.trace_path}"
            )
            stdin = options.get("stdin") or sys.stdin
            asyncio.run(run_in_terminal(config, stdin, self.stdout))
