"""The embedded platform: everything a realm needs, in or under this one process.

``EmbeddedPlatform.start()`` migrates the SQLite database, serves the platform app
(the homeserver pushes bus events to it), starts the homeserver unless one is
already running, and serves the model gateway and realmtools on their sockets.
With the `local` provider active and ``BEARPIT_LOCAL_MODEL`` set, it also serves that model
with llama.cpp (``ledger.local_server``) before the gateway, so no agent calls a model
that is not loaded. ``stop()`` stops exactly what ``start()`` started, in reverse order. There is no
broker: the foreground driver calls the service functions the tasks call, and a task
queued by name runs in this process (``bearpit.queue``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command

log = logging.getLogger(__name__)

Say = Callable[[str], None]


def run_dir() -> Path:
    return Path(settings.BEARPIT_HOME) / "run"


def serves_local_model(provider: str | None = None) -> bool:
    """Whether this platform serves ``BEARPIT_LOCAL_MODEL``: set, and `local` is the
    provider (the one named for this run, else the active one)."""
    from django.db import DatabaseError

    from ledger.services.profiles import LOCAL_PROVIDER, active_provider_name

    if not settings.BEARPIT_LOCAL_MODEL:
        return False
    if provider:
        return provider == LOCAL_PROVIDER
    try:
        return active_provider_name() == LOCAL_PROVIDER
    except DatabaseError:  # a database not migrated yet has no stored choice
        return settings.BEARPIT_PROVIDER == LOCAL_PROVIDER


class EmbeddedPlatform:
    def __init__(
        self, say: Say | None = None, *, provider: str | None = None, agents: int | None = None
    ) -> None:
        self._say = say or (lambda _text: None)
        self.provider = provider
        # The realm's size, when one realm is all this platform runs: the local model
        # server gets a slot per agent (``ledger.local_server.slots_for``).
        self.agents = agents
        self._stops: list[tuple[str, Callable[[], Any]]] = []
        self.local_server: Any = None

    def start(self) -> EmbeddedPlatform:
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        from realms.forge import bytecode

        call_command("migrate", interactive=False, verbosity=0)
        run_dir().mkdir(parents=True, exist_ok=True)
        bytecode.start_compiling()  # while the homeserver starts
        if settings.BEARPIT_MATRIX_URL is None:
            self._start_bus()
        if serves_local_model(self.provider):
            self._start_local_model()
        self._start_gateway()
        self._start_realmtools()

    def _start_bus(self) -> None:
        from bearpit.server import PlatformServer
        from realms.herald.config import HomeserverConfig
        from realms.herald.delivery import resume_delivery
        from realms.herald.homeserver import running_homeserver, start_homeserver
        from realms.herald.matrix import MatrixError

        server = PlatformServer(settings.BEARPIT_PLATFORM_PORT).start()
        self._stops.append(("platform server", server.stop))
        config = HomeserverConfig.from_settings()
        handle = running_homeserver(config)
        if handle is None:
            self._say("starting the homeserver (first start takes a few seconds)")
            handle = start_homeserver(config)
            self._stops.append(("homeserver", handle.stop))
        # A homeserver that held pushes while we were away sends them once woken, and what
        # a crash kept it from pushing at all is read back from the rooms.
        try:
            resume_delivery()
        except (MatrixError, OSError) as exc:
            log.info("resuming bus delivery: %s", exc)

    def _start_local_model(self) -> None:
        from ledger.local_server import LocalServer, LocalServerConfig

        config = LocalServerConfig.from_settings(self.agents)
        slots = f"{config.slots} slot{'s' if config.slots != 1 else ''}"
        self._say(f"starting the local model server ({config.model.name}, {slots})")
        server = LocalServer(config, run_dir() / "local-model.log").start()
        self.local_server = server
        self._stops.append(("local model server", server.stop))

    def _start_gateway(self) -> None:
        from ledger.gateway.server import GatewayServer

        gateway = GatewayServer(uds_path=run_dir() / "gateway.sock").start()
        self._stops.append(("gateway", gateway.stop))

    def _start_realmtools(self) -> None:
        from realms.realmtools.server import RealmtoolsServer

        tools = RealmtoolsServer(uds_path=run_dir() / "realmtools.sock")
        tools.start()
        self._stops.append(("realmtools", tools.stop))

    def stop(self) -> None:
        while self._stops:
            name, stop = self._stops.pop()
            try:
                stop()
            except Exception:
                log.exception("stopping the %s failed", name)

    def __enter__(self) -> EmbeddedPlatform:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
