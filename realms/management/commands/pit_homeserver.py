"""Run the embedded Matrix homeserver in the foreground (for a process manager)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.herald.config import HomeserverConfig, write_config
from realms.herald.homeserver import free_port, prepare_database, running_homeserver
from realms.preflight import PreflightError, check_port_free


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
            check_port_free(config.port, "BEARPIT_MATRIX_PORT", "the homeserver needs it")
        except PreflightError as exc:
            raise CommandError(str(exc)) from exc
        try:
            write_config(config)
        except OSError as exc:
            raise CommandError(
                f"cannot write the homeserver's files under {config.data_dir}: "
                f"{exc.strerror or exc}; make it a folder this user can write"
            ) from exc
        try:
            prepare_database(config)
        except (OSError, psycopg.Error) as exc:
            raise CommandError(f"cannot prepare the homeserver's database: {exc}") from exc
        config.socket_path.unlink(missing_ok=True)
        # exec keeps the pid, so the pidfile written now names the homeserver itself.
        config.pid_path.write_text(f"{os.getpid()} {config.port}\n", encoding="utf-8")
        self.stdout.write(f"homeserver: serving {config.socket_path} and 127.0.0.1:{config.port}")
        self.stdout.flush()
        os.execv(  # noqa: S606  (replacing this process with Synapse, argument list of ours)
            sys.executable,
            [sys.executable, "-m", "synapse.app.homeserver", "-c", str(config.config_path)],
        )
