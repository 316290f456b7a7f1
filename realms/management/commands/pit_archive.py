"""``pit_archive REALM [-o DIR]``: write a realm's archive folder again, or export it.

Concluding already writes ``archive/``; this rewrites it from the Chronicle, or writes
a copy elsewhere.
"""

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
            help="write to OUT/<realm>/ (default: rewrite the realm's own archive/ folder)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            folder = archive_realm(options["realm"], options["out"])
        except UnknownRealmError as exc:
            raise CommandError(str(exc)) from None
        except OSError as exc:
            raise CommandError(f"could not write the archive: {exc}") from None
        self.stdout.write(str(folder))
