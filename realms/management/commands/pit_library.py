"""``pit_library``: import, export and list scenarios in the library."""

from __future__ import annotations

from argparse import ArgumentParser
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from realms.library import services
from realms.models import Scenario


class Command(BaseCommand):
    help = "Import, export and list scenario packages in the library."

    def add_arguments(self, parser: ArgumentParser) -> None:
        verbs = parser.add_subparsers(dest="verb", required=True)
        imp = verbs.add_parser("import", help="import a package folder or zip")
        imp.add_argument("path", type=Path)
        imp.add_argument("--name", help="library name (default: the folder or zip name)")
        exp = verbs.add_parser("export", help="export a scenario to a folder or zip")
        exp.add_argument("name")
        exp.add_argument("-o", "--out", type=Path, required=True, help="folder, or a .zip file")
        exp.add_argument(
            "--example", action="store_true", help="export the example, not a user copy"
        )
        verbs.add_parser("list", help="list scenarios (user copies shadow examples)")
        verbs.add_parser("sync-examples", help="make every example available in the library")
        rm = verbs.add_parser("delete", help="delete a user copy")
        rm.add_argument("name")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, "_" + options["verb"].replace("-", "_"))(options)
        except services.LibraryError as exc:
            raise CommandError(str(exc)) from exc

    def _import(self, options: dict[str, Any]) -> None:
        path: Path = options["path"]
        if path.is_file() and path.suffix == ".zip":
            scenario = services.import_zip(
                path.read_bytes(), name=options["name"] or path.stem, origin=str(path)
            )
        else:
            scenario = services.import_folder(path, name=options["name"])
        self._report(scenario)

    def _report(self, scenario: Scenario) -> None:
        state = "valid" if scenario.valid else "INVALID"
        self.stdout.write(
            f"{scenario.name} ({scenario.source}): {state}, {scenario.files.count()} files"
        )
        for error in scenario.validation.get("errors", []):
            self.stdout.write(f"  error: {error}")
        for warning in scenario.validation.get("warnings", []):
            self.stdout.write(f"  warning: {warning}")

    def _export(self, options: dict[str, Any]) -> None:
        if options["example"]:
            scenario = Scenario.objects.filter(name=options["name"], source="example").first()
            if scenario is None:
                raise CommandError(f"no example named {options['name']!r}")
        else:
            scenario = services.resolve(options["name"])
        out: Path = options["out"]
        if out.suffix == ".zip":
            out.write_bytes(services.export_zip(scenario))
        else:
            services.export_folder(scenario, out)
        self.stdout.write(f"exported {scenario.name} ({scenario.source}) to {out}")

    def _list(self, options: dict[str, Any]) -> None:
        for scenario in services.list_scenarios():
            mark = "" if scenario.valid else "  (invalid)"
            self.stdout.write(f"{scenario.name:<24} {scenario.source:<8} {scenario.title}{mark}")

    def _sync_examples(self, options: dict[str, Any]) -> None:
        synced = services.sync_examples()
        self.stdout.write(f"{len(synced)} examples available")

    def _delete(self, options: dict[str, Any]) -> None:
        services.delete_user_copy(options["name"])
        self.stdout.write(f"deleted the user copy of {options['name']}")
