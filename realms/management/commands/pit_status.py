"""``pit_status REALM``: state, event count and spend per agent."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chronicle import selectors
from realms.api.status import realm_status


class Command(BaseCommand):
    help = "Show a realm's state, how many events it chronicled, and each agent's spend."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="realm id")

    def handle(self, *args: Any, **options: Any) -> None:
        realm_id = options["realm"]
        if not selectors.realm_known(realm_id):
            raise CommandError(f"realm {realm_id!r}: no such realm")
        status = realm_status(realm_id)
        out = self.stdout
        out.write(f"realm:    {realm_id}")
        out.write(f"state:    {status['state']}" + ("" if status["active"] else " (not active)"))
        if status["outcome"] is not None:
            out.write(f"outcome:  {status['outcome']}")
        elif status["conclusion"]:
            c = status["conclusion"]
            out.write(f"ended:    {c.get('reason')} — {c.get('detail')}")
        out.write(f"events:   {status['events']}")
        out.write(f"messages: {status['messages']}")
        if status["spend"]:
            out.write("spend:")
            for agent, usd in status["spend"].items():
                out.write(f"  {agent}: ${usd:.4f}")
            out.write(f"  total: ${status['total_spend']:.4f}")
        else:
            out.write("spend:    (no spend recorded)")
        if status["error"]:
            out.write(f"error:    {status['error']}")
