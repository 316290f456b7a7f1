"""``pit_rerun REALM``: run an earlier realm again and print the new final report.

``--replay`` answers every model call from the realm's recording (the same transcript
again, at no cost) and reports the first call that diverges from it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DatabaseError

from realms.embedded import driver
from realms.embedded.platform import EmbeddedPlatform
from realms.management.foreground import ForegroundCommand
from realms.management.interrupts import Interrupts
from realms.management.quiet import quiet_logs
from realms.models import Realm
from realms.replay import service as replay
from realms.services.conclude import interrupt_realm
from realms.services.launch import LaunchError
from realms.services.rerun import rerun_realm
from realms.warden.watch import finish_concluding


def refused(what: str, exc: LaunchError) -> CommandError:
    """Replay and fork refusals are one line."""
    return CommandError(f"{what} refused: " + "; ".join(exc.problems))


def precheck(what: str, check: Callable[[], object]) -> None:
    """Refuse bad input before the platform starts (a database not yet set up is
    checked again once it is)."""
    try:
        check()
    except LaunchError as exc:
        raise refused(what, exc) from exc
    except DatabaseError:
        pass


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
        parser.add_argument(
            "--replay",
            action="store_true",
            help="answer every model call from the realm's recording, at no cost",
        )
        parser.add_argument(
            "--on-divergence",
            choices=("conclude", "live"),
            default="conclude",
            help="with --replay: conclude the realm (replay_diverged), or let the agent "
            "that diverged go on live on the provider",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        quiet_logs(options["verbosity"])
        if options["replay"]:
            if options["mode"] != "snapshot":
                raise CommandError("--replay runs the stored snapshot: drop --mode latest")
            precheck("replay", lambda: replay.check_recorded(options["realm"]))

            def launch() -> Realm:
                return replay.replay_realm(
                    options["realm"],
                    new_realm_id=options.get("new_realm"),
                    provider=options.get("provider"),
                    on_divergence=options["on_divergence"],
                )

            run_foreground(self, launch, f"replay of {options['realm']}", what="replay")
            return

        def rerun() -> Realm:
            return rerun_realm(
                options["realm"],
                options["mode"],
                new_realm_id=options.get("new_realm"),
                provider=options.get("provider"),
                allow_provider_fallback=options["allow_provider_fallback"],
            )

        run_foreground(self, rerun, f"rerun of {options['realm']} ({options['mode']})")


def run_foreground(
    cmd: ForegroundCommand, launch: Callable[[], Realm], title: str, *, what: str = ""
) -> None:
    """Start the platform, launch, run to the end, print what a replay did and the report."""
    platform = EmbeddedPlatform(cmd.say)
    interrupts = Interrupts().install()
    try:
        if not cmd.start_platform(platform):
            return
        try:
            realm = launch()
        except LaunchError as exc:
            if what:
                raise refused(what, exc) from exc
            raise CommandError("rerun refused:\n  " + "\n  ".join(exc.problems)) from exc
        except KeyboardInterrupt:
            cmd.say("interrupted before a realm was launched")
            return
        cmd.say(f"validate: {title} as {realm.realm_id}")
        try:
            state = driver.provision_in_foreground(realm.realm_id, cmd.say)
        except KeyboardInterrupt:
            interrupt_realm(realm.realm_id, "interrupted by the operator before the realm ran")
            state = Realm.State.INTERRUPTED
        if state == Realm.State.RUNNING:
            state = driver.run_to_end(realm.realm_id, cmd.say)
        if state == Realm.State.CONCLUDING:
            # The gateway began this conclusion (a replay diverged): its teardown is ours.
            finish_concluding(realm.realm_id)
            cmd.say(f"{Realm.objects.get(realm_id=realm.realm_id).state}: {realm.realm_id}")
        interrupts.hold()
        if what:
            for line in replay.summary(realm.realm_id).lines:
                cmd.say(line)
        cmd.stdout.write("")
        cmd.stdout.write(driver.report(realm.realm_id))
    finally:
        interrupts.hold()
        platform.stop()
