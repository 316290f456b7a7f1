"""``pit params PATH``: the parameters of a package, their defaults, origins and uses."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.packages import load_package
from realms.packages.report import parameter_lines


class Command(BaseCommand):
    help = "List a package's parameters: effective default and origin, bounds, where used."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="package folder or project.json/.yaml file")

    def handle(self, *args: Any, **options: Any) -> None:
        result = load_package(options["path"])
        if not result.ok:
            for error in result.errors:
                self.stderr.write(str(error))
            raise CommandError(f"{options['path']}: invalid package", returncode=1)
        if not result.parameters:
            self.stdout.write("No parameters.")
            return
        self.stdout.write("Parameters (* = required; [origin] of the default):")
        for line in parameter_lines(result.parameters, detailed=True):
            self.stdout.write(line)
