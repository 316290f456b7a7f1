"""``pit_archive REALM [-o DIR]``: write the realm's archive folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle.archive import UnknownRealmError, archive_realm


class Command(BaseCommand):
    help = (
        "Write a realm's transcript, report, events, messages, outputs, logs and "
        "reproducibility manifest into one folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")
        parser.add_argument(
            "-o",
            "--out",
            type=Path,
            default=None,
            help="write to OUT/<realm>/ (default: the realm's own archive/ folder)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            folder = archive_realm(options["realm"], options["out"])
        except UnknownRealmError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"could not write the archive: {exc}") from None
        self.stdout.write(str(folder))
