"""``pit_tail REALM [-n 20] [--full]``: the realm's last messages, one line each."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from chronicle.tail import tail_lines
from realms.management.base import RealmCommand


class Command(RealmCommand):
    help = "Print a realm's last messages, one line each (--full for the whole text)."
    requires_system_checks: list[str] = []  # read-only; the checks import every URL's views

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "-n", "--limit", type=int, default=20, help="how many messages (default 20)"
        )
        parser.add_argument(
            "--full", action="store_true", help="print every message whole, over several lines"
        )

    def handle_realm(self, realm_id: str, **options: Any) -> None:
        limit = options["limit"]
        if limit < 1:
            raise CommandError(f"--limit: expected a positive number; got {limit}")
        lines = tail_lines(realm_id, limit=limit, full=options["full"])
        if not lines:
            self.stdout.write("(no messages yet)")
        for line in lines:
            self.stdout.write(line)
