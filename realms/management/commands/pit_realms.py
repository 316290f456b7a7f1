"""``pit_realms [-n 20]``: the realms this installation knows, newest first, one line each,
with the worker host running each; ``pit_realms --hosts``: the worker hosts, their load
against their capacity and the age of their last heartbeat."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from chronicle import selectors
from realms.api.status import realm_list
from realms.hosts.listing import host_rows
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
        parser.add_argument(
            "--hosts", action="store_true", help="list the worker hosts instead of the realms"
        )

    def _hosts(self) -> None:
        rows = host_rows()
        if not rows:
            self.stdout.write("(no worker hosts: the realms run in this installation's process)")
            return
        table = [("HOST", "STATE", "LOAD", "BACKEND", "HEARTBEAT", "REALMS")]
        for row in rows:
            table.append(
                (
                    row["host_id"],
                    row["state"],
                    f"{row['load']}/{row['capacity']}",
                    row["backend"],
                    f"{row['heartbeat_age_s']:.0f}s ago",
                    ",".join(row["realms"]) or "-",
                )
            )
        widths = [max(len(r[i]) for r in table) for i in range(5)]
        for r in table:
            padded = [cell.ljust(width) for cell, width in zip(r[:5], widths, strict=True)]
            self.stdout.write("  ".join([*padded, r[5]]))

    def handle(self, *args: Any, **options: Any) -> None:
        limit = options["limit"]
        if limit < 1:
            raise CommandError(f"--limit: expected a positive number; got {limit}")
        if options["hosts"]:
            self._hosts()
            return
        rows = {r.realm_id: r for r in Realm.objects.all()}
        listed = []
        entries = realm_list()["realms"]
        for entry in entries:
            realm_id = entry["realm_id"]
            row = rows.get(realm_id)
            listed.append((_started_ms(realm_id, row) or 0, realm_id, entry["state"], row))
        hosts = {entry["realm_id"]: entry["host"] or "-" for entry in entries}
        listed.sort(key=lambda item: (-item[0], item[1]))
        if not listed:
            self.stdout.write("(no realms yet)")
            return
        table = [("REALM", "STATE", "HOST", "PACKAGE", "STARTED", "SPEND")]
        for started, realm_id, state, row in listed[:limit]:
            when = timezone.localtime(datetime.fromtimestamp(started / 1000, tz=UTC))
            spend = sum(t.usd for t in selectors.spend_by_agent(realm_id).values())
            package = _package(realm_id, row)
            when_text = f"{when:%Y-%m-%d %H:%M}"
            table.append((realm_id, state, hosts[realm_id], package, when_text, f"${spend:.4f}"))
        widths = [max(len(r[i]) for r in table) for i in range(5)]
        for r in table:
            padded = [cell.ljust(width) for cell, width in zip(r[:5], widths, strict=True)]
            self.stdout.write("  ".join([*padded, r[5]]))
