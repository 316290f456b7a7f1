"""``pit_tail REALM [-n 20]``: the realm's last messages, as transcript lines."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle import selectors
from chronicle.transcript import transcript_lines


class Command(BaseCommand):
    help = "Print a realm's last messages."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")
        parser.add_argument(
            "-n", "--limit", type=int, default=20, help="how many messages (default 20)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        realm_id, limit = options["realm"], options["limit"]
        if limit < 1:
            raise CommandError(f"--limit: expected a positive number; got {limit}")
        if not selectors.realm_known(realm_id):
            raise CommandError(f"realm {realm_id!r}: no such realm")
        lines = transcript_lines(realm_id, limit=limit)
        if not lines:
            self.stdout.write("(no messages yet)")
        for line in lines:
            self.stdout.write(line)
