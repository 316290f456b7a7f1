"""``pit_status REALM``: state, event count and spend per agent."""

from __future__ import annotations

from typing import Any

from chronicle.integrity import findings
from realms.api.status import realm_status
from realms.management.base import RealmCommand


class Command(RealmCommand):
    help = "Show a realm's state, how many events it chronicled, and each agent's spend."
    requires_system_checks: list[str] = []  # read-only; the checks import every URL's views

    def handle_realm(self, realm_id: str, **options: Any) -> None:
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
        found = findings(realm_id)
        if found:
            out.write("integrity:")
            for finding in found:
                out.write(f"  {finding.line()}")
