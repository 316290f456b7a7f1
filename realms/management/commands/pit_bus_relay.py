"""``pit_bus_relay --to HOST:PORT``: the homeserver's socket on a second worker host."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.hosts.relay import default_socket_path, parse_target, serve


class Command(BaseCommand):
    help = (
        "Listen on BEARPIT_HOME/run/homeserver.sock and relay to the shared homeserver, "
        "for a worker host that does not run it."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--to", required=True, help="the homeserver: host:port, or unix:/path/to.sock"
        )
        parser.add_argument("--socket", type=Path, default=None, help="listen here instead")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            target = parse_target(options["to"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        path: Path = options["socket"] or default_socket_path()
        self.stdout.write(f"pit_bus_relay: serving {path} → {options['to']}")
        self.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve(path, target))
