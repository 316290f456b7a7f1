"""``pit_rerun REALM``: run an earlier realm again and print the new final report."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from realms.embedded import driver
from realms.embedded.platform import EmbeddedPlatform
from realms.management.foreground import ForegroundCommand
from realms.management.interrupts import Interrupts
from realms.management.quiet import quiet_logs
from realms.models import Realm
from realms.services.conclude import interrupt_realm
from realms.services.launch import LaunchError
from realms.services.rerun import rerun_realm


class Command(ForegroundCommand):
    help = "Run a realm again from its stored snapshot (or its package), to its end."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("realm", help="the realm to run again")
        parser.add_argument(
            "--mode",
            choices=("snapshot", "latest"),
            default="snapshot",
            help="snapshot: the stored resolved project; latest: reload the package",
        )
        parser.add_argument("--as", dest="new_realm", help="id of the new realm")
        parser.add_argument("--provider", help="provider profile (default: the old realm's)")
        parser.add_argument("--allow-provider-fallback", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        quiet_logs(options["verbosity"])
        platform = EmbeddedPlatform(self.say)
        interrupts = Interrupts().install()
        try:
            if not self.start_platform(platform):
                return
            try:
                realm = rerun_realm(
                    options["realm"],
                    options["mode"],
                    new_realm_id=options.get("new_realm"),
                    provider=options.get("provider"),
                    allow_provider_fallback=options["allow_provider_fallback"],
                )
            except LaunchError as exc:
                raise CommandError("rerun refused:\n  " + "\n  ".join(exc.problems)) from exc
            except KeyboardInterrupt:
                self.say("interrupted before a realm was launched")
                return
            self.say(
                f"validate: rerun of {options['realm']} ({options['mode']}) as {realm.realm_id}"
            )
            try:
                state = driver.provision_in_foreground(realm.realm_id, self.say)
            except KeyboardInterrupt:
                interrupt_realm(realm.realm_id, "interrupted by the operator before the realm ran")
                state = Realm.State.INTERRUPTED
            if state == Realm.State.RUNNING:
                driver.run_to_end(realm.realm_id, self.say)
            interrupts.hold()
            self.stdout.write("")
            self.stdout.write(driver.report(realm.realm_id))
        finally:
            interrupts.hold()
            platform.stop()
