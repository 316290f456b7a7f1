"""``pit_realms [-n 20]``: the realms this installation knows, newest first, one line each."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from chronicle import selectors
from realms.api.status import realm_list
from realms.models import Realm


def _started_ms(realm_id: str, row: Realm | None) -> int | None:
    started = selectors.started_ms(realm_id)
    if started is None and row is not None:
        started = int(row.created_at.timestamp() * 1000)
    return started


def _package(realm_id: str, row: Realm | None) -> str:
    if row is not None:
        return row.package_name
    return str(selectors.run_config(realm_id).get("package") or "?")


class Command(BaseCommand):
    help = "List realms newest first: id, state, package, when it started, what it spent."
    requires_system_checks: list[str] = []  # read-only; the checks import every URL's views

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "-n", "--limit", type=int, default=20, help="how many realms (default 20)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        limit = options["limit"]
        if limit < 1:
            raise CommandError(f"--limit: expected a positive number; got {limit}")
        rows = {r.realm_id: r for r in Realm.objects.all()}
        listed = []
        for entry in realm_list()["realms"]:
            realm_id = entry["realm_id"]
            row = rows.get(realm_id)
            listed.append((_started_ms(realm_id, row) or 0, realm_id, entry["state"], row))
        listed.sort(key=lambda item: (-item[0], item[1]))
        if not listed:
            self.stdout.write("(no realms yet)")
            return
        table = [("REALM", "STATE", "PACKAGE", "STARTED", "SPEND")]
        for started, realm_id, state, row in listed[:limit]:
            when = timezone.localtime(datetime.fromtimestamp(started / 1000, tz=UTC))
            spend = sum(t.usd for t in selectors.spend_by_agent(realm_id).values())
            package = _package(realm_id, row)
            table.append((realm_id, state, package, f"{when:%Y-%m-%d %H:%M}", f"${spend:.4f}"))
        widths = [max(len(r[i]) for r in table) for i in range(4)]
        for r in table:
            padded = [cell.ljust(width) for cell, width in zip(r[:4], widths, strict=True)]
            self.stdout.write("  ".join([*padded, r[4]]))
