"""``manage.py pit_reap [--dry-run] [--force]``: remove sandboxes no live realm owns."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from realms.forge.reap import reap


class Command(BaseCommand):
    help = "Stop sandboxes, kill sandbox processes and unmount homes that no live realm owns."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="list what would be removed; change nothing"
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="count no realm as live: also remove what realms still marked running own "
            "(for a realm whose process is gone)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = bool(options["dry_run"])
        # On a worker host only its own realms' sandbox rows: the others are theirs.
        host_id = settings.BEARPIT_HOST_ID or None
        found = reap(dry_run=dry_run, force=bool(options["force"]), host_id=host_id)
        verb = "would remove" if dry_run else "removed"
        for item in found:
            detail = " ".join(f"{k}={v}" for k, v in item.items() if k != "kind")
            self.stdout.write(f"{verb} {item['kind']}: {detail}")
        self.stdout.write(f"{len(found)} item(s) {verb}")
