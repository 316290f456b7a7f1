"""``manage.py pit_providers list|use|seed``: provider profiles and the active one."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ledger.services.profiles import (
    ProfileError,
    active_provider_name,
    all_profiles,
    seed_profiles,
    set_active_profile,
)


class Command(BaseCommand):
    help = "List provider profiles, switch the active one, or restore the seed profiles."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("list")
        use = sub.add_parser("use")
        use.add_argument("name")
        seed = sub.add_parser("seed")
        seed.add_argument("--overwrite", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "list":
                active = active_provider_name()
                for name, profile in all_profiles().items():
                    mark = "*" if name == active else " "
                    tiers = ", ".join(f"{t}={v.model}" for t, v in profile.categories.items())
                    self.stdout.write(f"{mark} {name}\t{profile.transport}\t{tiers}")
            elif options["action"] == "use":
                profile = set_active_profile(options["name"])
                self.stdout.write(f"active provider: {profile.name}")
            else:
                n = seed_profiles(overwrite=options["overwrite"])
                self.stdout.write(f"seeded {n} profile(s)")
        except ProfileError as exc:
            raise CommandError(str(exc)) from exc
