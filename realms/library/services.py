"""Importing, exporting and resolving scenarios in the library.

A user's copy of a scenario shadows the bundled example of the same name: both are
kept, and :func:`resolve` prefers the user's.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from realms.library import files as trees
from realms.library.validation import locate
from realms.models import Scenario, ScenarioFile
from realms.packages import LoadResult, load_package

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,119}$")


class LibraryError(Exception):
    """A library operation was refused; nothing was changed."""


class NoSuchScenario(LibraryError):
    """No scenario of that name is in the library."""


class ScenarioExists(LibraryError):
    """A new scenario was asked for under a name the library already holds."""


class NotDeletable(LibraryError):
    """Only user copies can be deleted; the name holds only a bundled example."""


class InvalidPackage(LibraryError):
    """The package does not load; ``errors`` and ``warnings`` are located (file, line, path)."""

    def __init__(self, name: str, errors: list[dict[str, Any]], warnings: list[dict[str, Any]]):
        count = len(errors)
        super().__init__(
            f"{name}: the package has {count} error{'s' if count != 1 else ''}; nothing was saved"
        )
        self.errors = errors
        self.warnings = warnings


def tree_sha256(files: Mapping[str, bytes]) -> str:
    """One digest over paths and contents, independent of the order files were read."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def _load_tree(files: Mapping[str, bytes]) -> LoadResult:
    with tempfile.TemporaryDirectory(prefix="bearpit-validate-") as tmp:
        root = trees.write_folder(files, Path(tmp) / "package")
        return load_package(root)


def check_tree(files: Mapping[str, bytes]) -> dict[str, Any]:
    """Validate a tree without keeping it: ``{ok, errors, warnings}``, each problem located."""
    result = _load_tree(files)
    return {
        "ok": result.ok,
        "errors": [locate(error, files) for error in result.errors],
        "warnings": [locate(warning, files) for warning in result.warnings],
    }


def validate_tree(files: Mapping[str, bytes]) -> tuple[dict[str, Any], str]:
    """Load the tree as the loader would from disk; return the result and the title."""
    result = _load_tree(files)
    title = result.project.metadata.name if result.project is not None else ""
    validation = {
        "ok": result.ok,
        "errors": [str(error) for error in result.errors],
        "warnings": [str(warning) for warning in result.warnings],
    }
    return validation, title


def _check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise LibraryError(
            f"scenario name {name!r}: expected letters, digits, '.', '_' or '-' "
            "(at most 120, starting with a letter or digit)"
        )
    return name


@transaction.atomic
def store_tree(
    name: str,
    files: Mapping[str, bytes],
    *,
    source: str = Scenario.Source.USER,
    origin: str = "",
) -> Scenario:
    """Create or replace the scenario ``(name, source)`` with exactly these files."""
    _check_name(name)
    validation, title = validate_tree(files)
    scenario, _ = Scenario.objects.select_for_update().get_or_create(name=name, source=source)
    scenario.title = title
    scenario.origin = origin
    scenario.content_sha256 = tree_sha256(files)
    scenario.valid = bool(validation["ok"])
    scenario.validation = validation
    scenario.validated_at = timezone.now()
    scenario.save()
    scenario.files.all().delete()
    ScenarioFile.objects.bulk_create(
        ScenarioFile(scenario=scenario, path=path, content=content)
        for path, content in sorted(files.items())
    )
    return scenario


def _require_valid(name: str, files: Mapping[str, bytes]) -> None:
    checked = check_tree(files)
    if not checked["ok"]:
        raise InvalidPackage(name, checked["errors"], checked["warnings"])


def tree_from_texts(files: Mapping[str, str], *, where: str) -> dict[str, bytes]:
    """A tree sent as ``{path: text}``, checked like an archive's members."""
    try:
        return trees.check_tree(
            {path: text.encode("utf-8") for path, text in files.items()}, where=where
        )
    except trees.PackageTreeError as exc:
        raise LibraryError(str(exc)) from exc


def create_scenario(name: str, files: Mapping[str, bytes], *, origin: str) -> Scenario:
    """A new user scenario; refused when the name is taken or the package does not load."""
    _check_name(name)
    if Scenario.objects.filter(name=name).exists():
        raise ScenarioExists(f"{name!r} is already in the library; save it with PUT instead")
    _require_valid(name, files)
    return store_tree(name, files, origin=origin)


def clone_scenario(name: str, clone_of: str) -> Scenario:
    return create_scenario(name, scenario_files(resolve(clone_of)), origin=f"clone of {clone_of}")


def save_user_copy(name: str, files: Mapping[str, bytes]) -> Scenario:
    """Save over the scenario the name means; always into the user's copy, never an example."""
    resolve(name)
    _require_valid(name, files)
    return store_tree(name, files, origin="saved")


def import_tree(files: Mapping[str, bytes], *, name: str, origin: str) -> Scenario:
    """An uploaded folder, kept like an imported zip (an invalid one is kept, marked so)."""
    try:
        checked = trees.check_tree(files, where=origin)
    except trees.PackageTreeError as exc:
        raise LibraryError(str(exc)) from exc
    return store_tree(name, checked, origin=origin)


def import_folder(path: Path, *, name: str | None = None) -> Scenario:
    try:
        files = trees.read_folder(path)
    except trees.PackageTreeError as exc:
        raise LibraryError(str(exc)) from exc
    return store_tree(name or path.resolve().name, files, origin=str(path))


def import_zip(data: bytes, *, name: str, origin: str = "") -> Scenario:
    try:
        files = trees.read_zip(data, where=origin or f"{name}.zip")
    except trees.PackageTreeError as exc:
        raise LibraryError(str(exc)) from exc
    return store_tree(name, files, origin=origin)


def scenario_files(scenario: Scenario) -> dict[str, bytes]:
    return {f.path: bytes(f.content) for f in scenario.files.all()}


def export_folder(scenario: Scenario, dest: Path) -> Path:
    try:
        return trees.write_folder(scenario_files(scenario), dest)
    except trees.PackageTreeError as exc:
        raise LibraryError(str(exc)) from exc


def export_zip(scenario: Scenario) -> bytes:
    return trees.build_zip(scenario_files(scenario), top=scenario.name)


def materialize(scenario: Scenario) -> Path:
    """The scenario as a folder on disk, for the loader and for launching.

    Folders are content-addressed under ``BEARPIT_HOME/library``, so a stored scenario is
    written once and an edited one gets a new folder instead of changing a running realm's.
    """
    library = Path(settings.BEARPIT_HOME) / "library"
    root = library / scenario.content_sha256[:16] / scenario.name
    if not root.is_dir():
        library.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=library))
        trees.write_folder(scenario_files(scenario), staging / "package")
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            (staging / "package").rename(root)
        except OSError:
            if not root.is_dir():  # lost a race with another process writing the same folder
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return root


def load_scenario(scenario: Scenario) -> LoadResult:
    return load_package(materialize(scenario))


def sync_examples(examples_dir: Path | None = None) -> list[Scenario]:
    """Keep every example folder available in the library, refreshed when it changed."""
    root = examples_dir or Path(settings.BEARPIT_EXAMPLES_DIR)
    synced: list[Scenario] = []
    if not root.is_dir():
        return synced
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            files = trees.read_folder(folder)
        except trees.PackageTreeError:
            continue  # not a package; pit_validate on it explains why
        current = Scenario.objects.filter(name=folder.name, source=Scenario.Source.EXAMPLE).first()
        if current is not None and current.content_sha256 == tree_sha256(files):
            synced.append(current)
            continue
        synced.append(
            store_tree(folder.name, files, source=Scenario.Source.EXAMPLE, origin=str(folder))
        )
    return synced


def resolve(name: str) -> Scenario:
    """The scenario a name means: the user's copy if there is one, else the example."""
    candidates = {s.source: s for s in Scenario.objects.filter(name=name)}
    scenario = candidates.get(Scenario.Source.USER) or candidates.get(Scenario.Source.EXAMPLE)
    if scenario is None:
        raise NoSuchScenario(f"no scenario named {name!r} in the library")
    return scenario


def list_scenarios() -> list[Scenario]:
    """One entry per name, user copies shadowing examples."""
    chosen: dict[str, Scenario] = {}
    for scenario in Scenario.objects.order_by("name", "source"):
        if scenario.name not in chosen or scenario.source == Scenario.Source.USER:
            chosen[scenario.name] = scenario
    return [chosen[name] for name in sorted(chosen)]


@transaction.atomic
def delete_user_copy(name: str) -> None:
    """Delete the user's copy; an example it shadowed shows again."""
    deleted, _ = Scenario.objects.filter(name=name, source=Scenario.Source.USER).delete()
    if deleted:
        return
    if Scenario.objects.filter(name=name, source=Scenario.Source.EXAMPLE).exists():
        raise NotDeletable(f"{name!r} is a bundled example; examples cannot be deleted")
    raise NoSuchScenario(f"no scenario named {name!r} in the library")
