"""``pit_up PATH``: validate, launch, provision and run a realm to its end, then print
the final report. On the embedded default it needs nothing running beforehand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from realms.embedded import driver
from realms.embedded.platform import EmbeddedPlatform, serves_local_model
from realms.management.forecasting import forecast_lines, run_forecast
from realms.management.foreground import ForegroundCommand
from realms.management.interrupts import Interrupts
from realms.management.quiet import quiet_logs
from realms.models import Realm
from realms.services.conclude import interrupt_realm
from realms.services.launch import LaunchError, LaunchOptions, launch_realm, load_project
from realms.services.providers import choose_provider


def parse_params(items: list[str]) -> dict[str, str]:
    values: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"-p {item!r}: expected NAME=VALUE")
        values[name.strip()] = value
    return values


class Command(ForegroundCommand):
    help = "Run a scenario package as a realm until it ends, then print its final report."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="package folder or manifest file")
        parser.add_argument("--realm", help="realm id (default: <name>-<6 hex>)")
        parser.add_argument(
            "-p", "--param", action="append", default=[], help="NAME=VALUE (repeatable)"
        )
        parser.add_argument(
            "-y", "--yes", action="store_true", help="consent to missing required parameters"
        )
        parser.add_argument(
            "--free-response", action="store_true", help="agents see every Commons message"
        )
        parser.add_argument("--provider", help="provider profile to resolve tiers against")
        parser.add_argument(
            "--allow-provider-fallback",
            action="store_true",
            help="use the offline provider when the configured one cannot be called",
        )
        parser.add_argument(
            "--forecast",
            action="store_true",
            help="print the cost and duration forecast and stop (nothing is launched)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        quiet_logs(options["verbosity"])
        path = Path(options["path"])
        if options["forecast"]:
            found, note = run_forecast(
                path,
                parse_params(options["param"]),
                provider=options.get("provider"),
                realm_id=options.get("realm"),
                allow_missing=options["yes"],
                allow_fallback=options["allow_provider_fallback"],
            )
            for line in forecast_lines(found, note):
                self.say(line)
            return
        provider = options.get("provider")
        agents = realm_size(path) if serves_local_model(provider) else None
        platform = EmbeddedPlatform(self.say, provider=provider, agents=agents)
        interrupts = Interrupts().install()
        self._launched: str | None = None
        try:
            if not self.start_platform(platform):
                return
            try:
                realm_id = self._launch_or_resume(path, options)
            except KeyboardInterrupt:
                self._interrupted_early()
                return
            if realm_id is None:
                return
            driver.run_to_end(realm_id, self.say)
            interrupts.hold()
            self.stdout.write("")
            self.stdout.write(driver.report(realm_id))
        finally:
            interrupts.hold()
            platform.stop()

    def _interrupted_early(self) -> None:
        """Ctrl-C before the realm ran: tear down what exists and still report."""
        realm_id = self._launched
        if realm_id is None:
            self.say("interrupted before a realm was launched")
            return
        interrupt_realm(realm_id, "interrupted by the operator before the realm ran")
        self._finished(realm_id)

    def _launch_or_resume(self, path: Path, options: dict[str, Any]) -> str | None:
        wanted: str | None = options.get("realm")
        if wanted:
            existing = Realm.objects.filter(realm_id=wanted).first()
            if existing is not None and not existing.is_terminal:
                state = driver.resume(wanted, self.say)
                if state == Realm.State.RUNNING:
                    return wanted
                self._finished(wanted)
                return None
        try:
            project, _ = load_project(path)
        except LaunchError as exc:
            raise CommandError("invalid package:\n  " + "\n  ".join(exc.problems)) from exc
        agents = ", ".join(
            f"{a.id}{' (referee)' if a.role == 'referee' else ''}" for a in project.agents
        )
        ends = ", ".join(t.type for t in project.spec.termination) or "none declared"
        self.say(f"validate: {project.metadata.name} — agents {agents}; ends on {ends}")
        try:
            choice = choose_provider(
                options.get("provider"), allow_fallback=options["allow_provider_fallback"]
            )
            if choice.note:
                self.say(f"provider: {choice.note}")
            realm = launch_realm(
                path,
                LaunchOptions(
                    realm_id=wanted,
                    parameters=parse_params(options["param"]),
                    allow_missing_parameters=options["yes"],
                    free_response=options["free_response"],
                    choice=choice,
                ),
            )
        except LaunchError as exc:
            raise CommandError("launch refused:\n  " + "\n  ".join(exc.problems)) from exc
        self._launched = realm.realm_id
        state = driver.provision_in_foreground(realm.realm_id, self.say)
        if state != Realm.State.RUNNING:
            self._finished(realm.realm_id)
            return None
        return realm.realm_id

    def _finished(self, realm_id: str) -> None:
        realm = Realm.objects.get(realm_id=realm_id)
        self.stdout.write(f"{realm.state}: {realm_id} — {realm.conclusion_detail}")
        self.stdout.write("")
        self.stdout.write(driver.report(realm_id))
        if realm.state == Realm.State.FAILED:
            sys.exit(1)


def realm_size(path: Path) -> int | None:
    """How many agents the package declares (the local model server gets a slot each), or
    None when it does not load: the launch says why, after the platform has started."""
    try:
        project, _ = load_project(path)
    except LaunchError:
        return None
    return len(project.agents)
