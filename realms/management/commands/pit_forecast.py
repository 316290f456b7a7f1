"""``pit_forecast PACKAGE``: what a realm of the package is likely to cost and how long it
may run, per agent and in total, beside its caps; nothing is launched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.forecast.estimate import forecast
from realms.forecast.render import as_dict, lines
from realms.management.commands.pit_up import parse_params
from realms.services.launch import LaunchError, LaunchOptions
from realms.services.providers import choose_provider


def forecast_lines(path: Path, options: dict[str, Any]) -> list[str]:
    """The forecast of ``path`` as printed lines (``pit_up --forecast`` shares it)."""
    try:
        choice = choose_provider(
            options.get("provider"), allow_fallback=options.get("allow_provider_fallback", False)
        )
        found = forecast(
            path,
            LaunchOptions(
                realm_id=options.get("realm"),
                parameters=parse_params(options.get("param") or []),
                allow_missing_parameters=bool(options.get("yes")),
                choice=choice,
            ),
        )
    except LaunchError as exc:
        raise CommandError("forecast refused:\n  " + "\n  ".join(exc.problems)) from exc
    return ([f"provider: {choice.note}"] if choice.note else []) + lines(found)


class Command(BaseCommand):
    help = "Estimate a package's cost and duration per agent and in total, beside its caps."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="package folder or manifest file")
        parser.add_argument(
            "-p", "--param", action="append", default=[], help="NAME=VALUE (repeatable)"
        )
        parser.add_argument("-y", "--yes", action="store_true", help="allow missing parameters")
        parser.add_argument("--provider", help="provider profile to resolve tiers against")
        parser.add_argument(
            "--realm",
            help="measure as realm ID (ids are part of the prompt; default: a new one)",
        )
        parser.add_argument("--json", action="store_true", help="print the forecast as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        if options["json"]:
            try:
                choice = choose_provider(options.get("provider"), allow_fallback=False)
                found = forecast(
                    Path(options["path"]),
                    LaunchOptions(
                        realm_id=options.get("realm"),
                        parameters=parse_params(options["param"]),
                        allow_missing_parameters=options["yes"],
                        choice=choice,
                    ),
                )
            except LaunchError as exc:
                raise CommandError("forecast refused:\n  " + "\n  ".join(exc.problems)) from exc
            self.stdout.write(json.dumps(as_dict(found), indent=2))
            return
        for line in forecast_lines(Path(options["path"]), options):
            self.stdout.write(line)
