"""``pit schema [-o DIR]``: write the JSON Schemas of project.json and agent.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from realms.packages import write_json_schemas


class Command(BaseCommand):
    help = "Write project.schema.json and agent.schema.json (default folder: schemas)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("-o", "--out", default="schemas", help="output folder")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            written = write_json_schemas(Path(options["out"]))
        except OSError as exc:
            raise CommandError(f"cannot write to {options['out']}: {exc.strerror}") from exc
        for path in written:
            self.stdout.write(f"wrote {path}")
