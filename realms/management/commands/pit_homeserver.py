"""Run the embedded Matrix homeserver in the foreground (for a process manager)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.herald.config import HomeserverConfig, write_config
from realms.herald.homeserver import (
    HomeserverError,
    check_port,
    free_port,
    prepare_database,
    running_homeserver,
)


class Command(BaseCommand):
    help = (
        "Run the platform's Synapse homeserver in the foreground (it replaces this "
        "process, so signals reach it directly), or only write its config."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--write-config",
            action="store_true",
            help="write the config, keys and application-service registration, then exit",
        )
        parser.add_argument(
            "--port", type=int, default=None, help="client port on 127.0.0.1 (default: setting)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        config = HomeserverConfig.from_settings()
        if options["port"] is not None:
            config = replace(config, port=options["port"])
        if options["write_config"]:
            write_config(config)
            self.stdout.write(f"homeserver config: {config.config_path}")
            self.stdout.write(f"application-service registration: {config.registration_path}")
            return
        running = running_homeserver(config)
        if running is not None:
            raise CommandError(f"a homeserver already serves this home (pid {running.pid})")
        if config.port == 0:
            config = replace(config, port=free_port())
        try:
            check_port(config.port)
            write_config(config)
            prepare_database(config)
        except (HomeserverError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        config.socket_path.unlink(missing_ok=True)
        # exec keeps the pid, so the pidfile written now names the homeserver itself.
        config.pid_path.write_text(f"{os.getpid()} {config.port}\n", encoding="utf-8")
        self.stdout.write(f"homeserver: serving {config.socket_path} and 127.0.0.1:{config.port}")
        self.stdout.flush()
        os.execv(  # noqa: S606  (replacing this process with Synapse, argument list of ours)
            sys.executable,
            [sys.executable, "-m", "synapse.app.homeserver", "-c", str(config.config_path)],
        )
