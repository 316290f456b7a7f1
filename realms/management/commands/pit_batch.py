"""``pit_batch PACKAGE -n N``: run N realms of one package, K at a time, and print the
batch report (k of N reached the intended ending, with its interval). ``--resume ID``
continues a batch that was killed or interrupted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from realms.batch.report import batch_dir
from realms.batch.runner import BatchRunner
from realms.batch.service import BatchError, BatchRequest, create_batch
from realms.embedded.platform import EmbeddedPlatform
from realms.management.commands.pit_up import parse_params
from realms.management.foreground import ForegroundCommand
from realms.management.interrupts import Interrupts
from realms.management.quiet import quiet_logs
from realms.models import Batch
from realms.services.launch import LaunchError
from realms.services.providers import choose_provider


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    grid: dict[str, list[str]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        split = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not name.strip() or not split:
            raise CommandError(f"--grid {item!r}: expected NAME=V1,V2,…")
        if name.strip() in grid:
            raise CommandError(f"--grid {name.strip()}: given twice")
        grid[name.strip()] = split
    return grid


class Command(ForegroundCommand):
    help = "Run N realms of one package and report k of N reached the intended ending."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help="package folder or manifest file")
        parser.add_argument("-n", type=int, default=None, help="number of runs")
        parser.add_argument("--concurrency", type=int, default=1, help="realms live at once")
        parser.add_argument(
            "-p", "--param", action="append", default=[], help="NAME=VALUE (repeatable)"
        )
        parser.add_argument(
            "--grid",
            action="append",
            default=[],
            help="NAME=V1,V2,… — the runs cycle through every combination (repeatable)",
        )
        parser.add_argument(
            "--intended",
            help="termination kinds that count as the intended ending, comma-separated "
            "(default: the package's research.json, else referee_verdict, machine_terminal, "
            "file, message)",
        )
        parser.add_argument("--provider", help="provider profile to resolve tiers against")
        parser.add_argument(
            "--allow-provider-fallback",
            action="store_true",
            help="use the offline provider when the configured one cannot be called",
        )
        parser.add_argument("--resume", metavar="BATCH", help="continue this batch")

    def _batch(self, options: dict[str, Any]) -> Batch:
        if options["resume"]:
            batch = Batch.objects.filter(batch_id=options["resume"]).first()
            if batch is None:
                raise CommandError(f"--resume {options['resume']!r}: no such batch")
            return batch
        intended = [k.strip() for k in (options["intended"] or "").split(",") if k.strip()]
        try:
            return create_batch(
                BatchRequest(
                    package=Path(options["path"]),
                    count=options["n"],
                    concurrency=options["concurrency"],
                    parameters=parse_params(options["param"]),
                    grid=parse_grid(options["grid"]),
                    provider=options.get("provider") or "",
                    intended=intended or None,
                )
            )
        except BatchError as exc:
            raise CommandError("batch refused:\n  " + "\n  ".join(exc.problems)) from exc

    def handle(self, *args: Any, **options: Any) -> None:
        quiet_logs(options["verbosity"])
        if not options["resume"] and (not options["path"] or options["n"] is None):
            raise CommandError("give PACKAGE and -n N (or --resume BATCH)")
        platform = EmbeddedPlatform(self.say)
        interrupts = Interrupts().install()
        try:
            # The platform first: its start migrates a fresh home's database.
            if not self.start_platform(platform):
                return
            batch = self._batch(options)
            try:
                choice = choose_provider(
                    options.get("provider") or batch.provider or None,
                    allow_fallback=options["allow_provider_fallback"],
                )
            except LaunchError as exc:
                raise CommandError("\n  ".join(exc.problems)) from exc
            if choice.note:
                self.say(f"provider: {choice.note}")
            runner = BatchRunner(batch.batch_id, choice, self.say)
            try:
                runner.run()
            except KeyboardInterrupt:
                interrupts.hold()
                return
            interrupts.hold()
            runner.finish()
            self.stdout.write("")
            self.stdout.write((batch_dir(batch.batch_id) / "report.md").read_text("utf-8"))
        finally:
            interrupts.hold()
            platform.stop()
