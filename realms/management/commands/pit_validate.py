"""``pit validate PATH``: load a package and print what it declares, or every problem."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.packages import load_package
from realms.packages.report import summary_lines


class Command(BaseCommand):
    help = "Validate a scenario package (a folder or a single manifest file)."
    requires_system_checks: list[str] = []  # read-only; the checks import every URL's views

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="package folder or project.json/.yaml file")

    def handle(self, *args: Any, **options: Any) -> None:
        result = load_package(options["path"])
        if not result.ok:
            for error in result.errors:
                self.stderr.write(str(error))
            for warning in result.warnings:
                self.stderr.write(f"warning: {warning}")
            count = len(result.errors)
            raise CommandError(
                f"{options['path']}: invalid package ({count} problem{'s' * (count != 1)})",
                returncode=1,
            )
        for line in summary_lines(result):
            self.stdout.write(line)
        self.stdout.write(self.style.SUCCESS("OK"))
