from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest

from realms.library import files as trees
from realms.library import services
from realms.models import Scenario
from tests.conftest import REPO
from tests.fixtures.compat import COMPAT

TOOLCHECK = REPO / "examples" / "toolcheck"


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _minimal_package(root: Path, *, name: str = "Tiny", on_exhausted: str = "starve") -> Path:
    (root / "agents" / "solo").mkdir(parents=True)
    (root / "project.json").write_text(json.dumps({"metadata": {"name": name}}))
    (root / "agents" / "solo" / "agent.json").write_text(
        json.dumps({"id": "solo", "budget": {"on_exhausted": on_exhausted}})
    )
    (root / "agents" / "solo" / "persona.md").write_text("You are solo.\n")
    return root


@pytest.mark.django_db
@pytest.mark.parametrize(
    "source",
    [
        pytest.param(TOOLCHECK, id="toolcheck"),
        pytest.param(COMPAT / "poker-table", id="poker-table", marks=pytest.mark.compat),
        pytest.param(COMPAT / "cygnus-crew", id="cygnus-crew", marks=pytest.mark.compat),
    ],
)
def test_folder_round_trip_is_byte_identical(tmp_path: Path, source: Path):
    package = source.name
    scenario = services.import_folder(source)
    assert scenario.valid, scenario.validation
    assert scenario.name == package
    out = services.export_folder(scenario, tmp_path / "out")
    assert _tree(out) == _tree(source)


@pytest.mark.compat
@pytest.mark.django_db
def test_zip_round_trip_and_exports_are_deterministic(tmp_path: Path):
    original = _tree(COMPAT / "rps-duel")
    upload = trees.build_zip(original, top="rps-duel")
    scenario = services.import_zip(upload, name="rps-duel")
    first = services.export_zip(scenario)
    assert first == services.export_zip(scenario)
    assert trees.read_zip(first) == original
    services.export_folder(scenario, tmp_path / "again")
    assert _tree(tmp_path / "again") == original


@pytest.mark.django_db
def test_an_invalid_package_is_kept_with_its_located_errors(tmp_path: Path):
    root = _minimal_package(tmp_path / "broken", on_exhausted="stop")
    scenario = services.import_folder(root)
    assert scenario.valid is False
    assert any(
        "agents/solo/agent.json" in error and "budget.on_exhausted" in error
        for error in scenario.validation["errors"]
    ), scenario.validation


@pytest.mark.django_db
@pytest.mark.parametrize(
    "member",
    ["../evil.txt", "/etc/passwd", "pkg/../../x", "C:\\windows\\x"],
)
def test_a_zip_that_escapes_is_refused_and_changes_nothing(member: str):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("project.json", "{}")
        archive.writestr(member, "boom")
    with pytest.raises(services.LibraryError, match="expected a relative path"):
        services.import_zip(buffer.getvalue(), name="evil")
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_a_zip_bomb_is_refused_without_inflating_it():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("project.json", b"\0" * (trees.MAX_TOTAL_BYTES + 10))
    assert len(buffer.getvalue()) < 100_000
    with pytest.raises(services.LibraryError, match="more than 5 MB"):
        services.import_zip(buffer.getvalue(), name="bomb")
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_not_a_zip_is_a_clear_error():
    with pytest.raises(services.LibraryError, match=r"upload\.zip: not a zip archive"):
        services.import_zip(b"hello", name="x", origin="upload.zip")


@pytest.mark.django_db
def test_symlinks_in_a_folder_are_refused(tmp_path: Path):
    root = _minimal_package(tmp_path / "linky")
    os.symlink("/etc/hostname", root / "agents" / "solo" / "notes.md")
    with pytest.raises(services.LibraryError, match="symlinks are not allowed"):
        services.import_folder(root)
    assert not Scenario.objects.exists()


@pytest.mark.django_db
def test_bad_names_are_refused(tmp_path: Path):
    root = _minimal_package(tmp_path / "ok")
    with pytest.raises(services.LibraryError, match="scenario name"):
        services.import_folder(root, name="../up")


@pytest.mark.django_db
def test_a_user_copy_shadows_the_example(tmp_path: Path):
    examples = tmp_path / "examples"
    _minimal_package(examples / "tiny", name="Example tiny")
    services.sync_examples(examples)
    assert services.resolve("tiny").source == "example"

    services.import_folder(_minimal_package(tmp_path / "mine" / "tiny", name="My tiny"))
    assert services.resolve("tiny").title == "My tiny"
    assert [(s.name, s.source) for s in services.list_scenarios()] == [("tiny", "user")]

    services.delete_user_copy("tiny")
    assert services.resolve("tiny").title == "Example tiny"
    with pytest.raises(services.LibraryError, match="examples cannot be deleted"):
        services.delete_user_copy("tiny")
    with pytest.raises(services.LibraryError, match="no scenario named 'nope'"):
        services.resolve("nope")


@pytest.mark.django_db
def test_sync_examples_refreshes_only_what_changed(tmp_path: Path):
    examples = tmp_path / "examples"
    root = _minimal_package(examples / "tiny")
    (first,) = services.sync_examples(examples)
    (again,) = services.sync_examples(examples)
    assert again.updated_at == first.updated_at
    (root / "agents" / "solo" / "persona.md").write_text("You are solo, changed.\n")
    (changed,) = services.sync_examples(examples)
    assert changed.pk == first.pk
    assert changed.content_sha256 != first.content_sha256
    assert b"changed" in services.scenario_files(changed)["agents/solo/persona.md"]
