"""Serve the realmtools MCP server (production: one per platform host)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.preflight import PreflightError, check_port_free
from realms.realmtools.server import RealmtoolsServer, default_socket_path


class Command(BaseCommand):
    help = "Serve realmtools (the realm mechanics over MCP) on its Unix socket."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--socket",
            type=Path,
            default=None,
            help="Unix socket path (default: BEARPIT_HOME/run/realmtools.sock)",
        )
        parser.add_argument(
            "--port", type=int, default=None, help="also listen on 127.0.0.1:PORT (for debugging)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["socket"] or default_socket_path()
        logging.getLogger("realms.realmtools.audit").setLevel(logging.INFO)
        if options["port"]:
            try:
                check_port_free(options["port"], "--port", "realmtools was asked to listen there")
            except PreflightError as exc:
                raise CommandError(str(exc)) from exc
        server = RealmtoolsServer(uds_path=path, port=options["port"])
        self.stdout.write(f"realmtools: serving {path}")
        try:
            server.serve_forever()
        except RuntimeError as exc:
            raise CommandError(str(exc)) from exc
