"""``manage.py pit_gateway``: serve the model gateway (TCP and the Unix socket)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from ledger.gateway.server import GatewayServer, default_socket_path


class Command(BaseCommand):
    help = "Serve the OpenAI-compatible model gateway with virtual keys, caps and metering."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--port",
            type=int,
            default=settings.BEARPIT_GATEWAY_PORT,
            help="TCP port on 127.0.0.1 (0 = any free port; -1 = no TCP)",
        )
        parser.add_argument(
            "--uds", type=Path, default=None, help="Unix socket path (default BEARPIT_HOME/run)"
        )
        parser.add_argument("--no-uds", action="store_true", help="serve TCP only")
        parser.add_argument("--host", default="127.0.0.1")

    def handle(self, *args: Any, **options: Any) -> None:
        uds = None if options["no_uds"] else (options["uds"] or default_socket_path())
        port = None if options["port"] < 0 else options["port"]
        server = GatewayServer(uds_path=uds, port=port, host=options["host"])
        where = [
            w
            for w in (f"{options['host']}:{port}" if port is not None else "", str(uds or ""))
            if w
        ]
        self.stdout.write(f"gateway: serving on {' and '.join(where)}", ending="\n")
        self.stdout.flush()
        server.run()
