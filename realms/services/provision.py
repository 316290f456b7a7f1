"""Provision: build a pending realm's bus, keys, tokens, birth configs and sandboxes.

Lifecycle ``provisioning`` first; then Herald (users, Commons, DM rooms), Ledger
(one capped virtual key per agent, carrying its offline script when the provider
is scripted), realmtools tokens, birth configs, and Forge sandboxes. If any step
fails, what was built is torn down and the realm ends as ``failed``; the error is
re-raised for the caller to report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.db import connections, transaction
from django.utils import timezone

from chronicle.kinds import Kind, Lifecycle
from chronicle.services import record_event
from ledger.services.keys import mint_virtual_key
from ledger.services.profiles import all_profiles
from realms.forge import bytecode
from realms.forge.command import runtime_argv
from realms.forge.models import Sandbox
from realms.forge.services import (
    AgentSandboxRequest,
    deliver_birth,
    start_agent_sandboxes,
)
from realms.herald.bus import agent_credentials, provision_bus
from realms.herald.directory import BusAgent, RealmBus
from realms.models import Realm, RealmAgent
from realms.plan import RealmPlan, plan_of
from realms.realmtools.identity import mint_token
from realms.services.birth import build_birth
from realms.services.teardown import tear_down

log = logging.getLogger(__name__)

OFFLINE_DIR = "offline"
# How long a started runtime waits for its birth config before it gives up.
BIRTH_WAIT_S = 600.0


class ProvisionError(Exception):
    """Provisioning failed; the realm was torn down and marked failed."""


def _set_state(realm: Realm, state: str, **fields: Any) -> None:
    Realm.objects.filter(pk=realm.pk).update(state=state, updated_at=timezone.now(), **fields)
    realm.state = state


def claim_for_provisioning(realm_id: str) -> Realm | None:
    """Move a pending realm to provisioning; None if another worker has it."""
    with transaction.atomic():
        moved = Realm.objects.filter(realm_id=realm_id, state=Realm.State.PENDING).update(
            state=Realm.State.PROVISIONING, updated_at=timezone.now()
        )
        if not moved:
            return None
        record_event(realm_id, Kind.LIFECYCLE, {"event": Lifecycle.PROVISIONING})
    return Realm.objects.get(realm_id=realm_id)


def offline_script(package_path: str, agent_id: str) -> str | None:
    """The agent's scripted-provider script shipped with the package, if any."""
    if not package_path:
        return None
    root = Path(package_path)
    if root.is_file():
        root = root.parent
    for name in (f"{agent_id}.yaml", f"{agent_id}.yml"):
        path = root / OFFLINE_DIR / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _bus_agents(realm_plan: RealmPlan) -> list[BusAgent]:
    return [
        BusAgent(agent_id=a.id, role=a.role, private_messaging=asdict(a.dm))
        for a in realm_plan.agents
    ]


def _mint_keys(realm: Realm) -> dict[str, tuple[str, str]]:
    """agent id → (model name for the runtime, virtual key secret)."""
    profiles = all_profiles()
    out: dict[str, tuple[str, str]] = {}
    for agent in plan_of(realm).agents:
        agent_id = agent.id
        profile = profiles.get(agent.provider)
        scripted = profile is not None and profile.transport == "scripted"
        script = offline_script(realm.package_path, agent_id) if scripted else None
        budget = agent.budget_usd
        _key, secret = mint_virtual_key(
            realm_id=realm.realm_id,
            agent_id=agent_id,
            provider=agent.provider,
            model=agent.model,
            cap_usd=None if budget is None else Decimal(str(budget)),
            on_exhausted=agent.on_exhausted,
            script=script,
            effort=agent.effort,
            context_length=agent.context_length,
        )
        out[agent_id] = (f"{realm.realm_id}--{agent_id}", secret)
    return out


def _launch_requests(realm: Realm) -> list[AgentSandboxRequest]:
    """One sandbox per agent, with its resource files and a runtime that waits for its
    birth config: that is only ready once the bus and the keys exist."""
    realm_plan = plan_of(realm)
    requests = []
    for agent in realm_plan.agents:
        resources = {**realm_plan.project_resources, **agent.resource_files}
        requests.append(
            AgentSandboxRequest(
                agent_id=agent.id,
                birth_config=None,
                resources=resources,
                argv=runtime_argv(await_birth_s=BIRTH_WAIT_S),
            )
        )
    return requests


def _births(realm: Realm, bus: RealmBus, keys: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """agent id → its birth config (JSON text, secrets inside)."""
    realm_plan = plan_of(realm)
    roster = list(realm_plan.participants)
    births: dict[str, str] = {}
    for agent in realm_plan.agents:
        agent_id = agent.id
        creds = agent_credentials(realm.realm_id, agent_id)
        token = None
        if realm_plan.realmtools:
            token = mint_token(
                realm.realm_id,
                agent_id,
                "referee" if agent.is_referee else "player",
                roster,
                list(agent.tools),
            )
        model_name, secret = keys[agent_id]
        birth = build_birth(
            realm_id=realm.realm_id,
            plan=realm_plan,
            agent_id=agent_id,
            mxid=creds.mxid,
            access_token=creds.access_token,
            commons_room_id=creds.commons_room_id,
            dm_rooms=creds.dm_rooms,
            users=bus.users,
            system_mxid=bus.system_user_id,
            operator_mxid=bus.operator_user_id,
            virtual_key=secret,
            model_name=model_name,
            realmtools_token=token,
        )
        births[agent_id] = birth.model_dump_json()
        RealmAgent.objects.filter(realm=realm, agent_id=agent_id).update(matrix_user_id=creds.mxid)
    return births


class _EarlySandboxes:
    """The realm's sandboxes, started in a thread while the bus and keys are made.

    An agent's interpreter start-up is most of the time it takes to come alive, and it
    needs nothing from the bus; so the runtimes load their code meanwhile and wait for
    their birth configs. Once ``hand_births`` has them, each sandbox gets its config as
    soon as it runs, in this thread, so a birth never races the thread's own teardown
    of a failed start. ``result`` re-raises a failure of the thread.
    """

    def __init__(self, realm: Realm) -> None:
        env = plan_of(realm).environment
        self._realm = realm
        self._requests = _launch_requests(realm)
        self._shared = env.shared_folder
        self._egress = env.network_egress
        self._rows: list[Sandbox] = []
        self._error: BaseException | None = None
        self._births: dict[str, str] | None = None
        self._births_ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="realm-sandboxes", daemon=True)
        self._thread.start()

    def hand_births(self, births: dict[str, str]) -> None:
        self._births = births
        self._births_ready.set()

    def abandon(self) -> None:
        """Provisioning failed elsewhere: deliver nothing, just finish starting."""
        self._births_ready.set()

    def _deliver(self, row: Sandbox) -> None:
        self._births_ready.wait()
        if self._births is None or self._error is not None:
            return
        try:
            deliver_birth(self._realm.realm_id, row.agent_id, self._births[row.agent_id])
            RealmAgent.objects.filter(realm=self._realm, agent_id=row.agent_id).update(
                state=RealmAgent.State.RUNNING, sandbox_id=str(row.pk)
            )
        except Exception as exc:  # reported by result(); the realm is then torn down
            self._error = exc

    def _run(self) -> None:
        try:
            bytecode.wait_compiled()
            self._rows = start_agent_sandboxes(
                self._realm.realm_id,
                self._requests,
                shared_folder=self._shared,
                egress=self._egress,
                on_started=self._deliver,
            )
        except BaseException as exc:  # handed to the provisioning thread by result()
            self._error = self._error or exc
        finally:
            connections.close_all()

    def join(self) -> None:
        self._thread.join()

    def result(self) -> list[Sandbox]:
        self.join()
        if self._error is not None:
            raise self._error
        return self._rows


def provision_realm(realm_id: str) -> Realm | None:
    """Provision a pending realm; None if it is not pending (someone else has it)."""
    realm = claim_for_provisioning(realm_id)
    if realm is None:
        return None
    sandboxes: _EarlySandboxes | None = None
    try:
        sandboxes = _EarlySandboxes(realm)
        realm_plan = plan_of(realm)
        bus = provision_bus(
            realm_id,
            _bus_agents(realm_plan),
            turns=realm_plan.turns is not None,
            allow_side_channels=realm_plan.environment.allow_side_channels,
        )
        keys = _mint_keys(realm)
        sandboxes.hand_births(_births(realm, bus, keys))
        sandboxes.result()
    except BaseException as exc:
        if sandboxes is not None:
            sandboxes.abandon()
            sandboxes.join()  # tear down only once nothing is starting any more
        if not isinstance(exc, Exception):
            raise  # Ctrl-C or an exit: the caller ends the realm as interrupted
        log.exception("provisioning %s failed", realm_id)
        fail_realm(realm, f"provisioning failed: {type(exc).__name__}: {exc}")
        raise ProvisionError(str(exc)) from exc
    return realm


def fail_realm(realm: Realm, detail: str) -> None:
    """Tear down whatever exists (the one teardown) and record lifecycle ``failed``."""
    tear_down(realm.realm_id, "provisioning failed")
    with transaction.atomic():
        record_event(realm.realm_id, Kind.LIFECYCLE, {"event": Lifecycle.FAILED, "detail": detail})
        _set_state(
            realm,
            Realm.State.FAILED,
            conclusion_reason="failed",
            conclusion_detail=detail[:2000],
            concluded_at=timezone.now(),
        )


def bring_up_realm(realm_id: str) -> str | None:
    """Provision a pending realm and mark it running; its state, None on a repeat."""
    try:
        realm = provision_realm(realm_id)
    except ProvisionError:
        return Realm.State.FAILED
    if realm is None:
        return None
    running = mark_running(realm_id)
    return None if running is None else running.state


def mark_running(realm_id: str) -> Realm | None:
    """Provisioned → running: chronicle the rooms, the run_config and the project."""
    from realms.herald.directory import get_bus
    from realms.herald.models import BusRoom
    from realms.warden.state import mark_watch_started

    bus = get_bus(realm_id)
    side_channels = {room.room_id: room.label for room in bus.rooms.filter(kind=BusRoom.Kind.DM)}
    with transaction.atomic():
        realm = Realm.objects.select_for_update().get(realm_id=realm_id)
        if realm.state != Realm.State.PROVISIONING:
            return None
        event = record_event(
            realm_id,
            Kind.LIFECYCLE,
            {
                "event": Lifecycle.RUNNING,
                "commons_room": bus.commons_room_id,
                "side_channels": side_channels,
                "config": realm.run_config,
                "project": realm.project,
                "package": realm.package_path,
                "require_mention": plan_of(realm).require_mention,
            },
        )
        _set_state(realm, Realm.State.RUNNING, started_at=timezone.now())
        mark_watch_started(realm, event.ts_ms)
    return realm
