"""``pit_forecast PACKAGE``: what a realm of the package is likely to cost and how long it
may run, per agent and in total, beside its caps; nothing is launched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from realms.forecast.render import as_dict
from realms.management.commands.pit_up import parse_params
from realms.management.forecasting import forecast_lines, run_forecast


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
        found, note = run_forecast(
            Path(options["path"]),
            parse_params(options["param"]),
            provider=options.get("provider"),
            realm_id=options.get("realm"),
            allow_missing=options["yes"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(as_dict(found), indent=2))
            return
        for line in forecast_lines(found, note):
            self.stdout.write(line)
