"""``pit_fork REALM --at POINT``: the same world again, with one thing changed.

A new realm of the same package whose agents replay their recorded calls up to the fork
point, then go live on the given provider (default ``offline``).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from realms.management.commands.pit_rerun import precheck, run_foreground
from realms.management.commands.pit_up import parse_params
from realms.management.foreground import ForegroundCommand
from realms.management.quiet import quiet_logs
from realms.models import Realm
from realms.replay import service as replay


class Command(ForegroundCommand):
    help = "Fork a recorded realm: replay its calls up to a point, then go live."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="the recorded realm to fork")
        parser.add_argument(
            "--at",
            required=True,
            help="the fork point: an event id, an ISO time, or +SECONDS from its start",
        )
        parser.add_argument(
            "-p", "--param", action="append", default=[], help="NAME=VALUE (repeatable)"
        )
        parser.add_argument(
            "--provider", default="offline", help="provider after the fork (default offline)"
        )
        parser.add_argument("--as", dest="new_realm", help="id of the new realm")

    def handle(self, *args: Any, **options: Any) -> None:
        quiet_logs(options["verbosity"])
        realm_id, at = options["realm"], options["at"]
        params = parse_params(options["param"])
        precheck("fork", lambda: replay.fork_point_ms(replay.check_recorded(realm_id), at))

        def launch() -> Realm:
            return replay.fork_realm(
                realm_id,
                at,
                parameters=params,
                provider=options["provider"],
                new_realm_id=options.get("new_realm"),
            )

        run_foreground(self, launch, f"fork of {realm_id} at {at}", what="fork")
