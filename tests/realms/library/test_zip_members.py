"""Zip import: every broken archive is refused with a located message, never a crash."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from realms.library import files as trees
from realms.library import services
from realms.models import Scenario

from .badzips import BROKEN, good

pytestmark = [pytest.mark.timeout(120)]


def test_the_good_archive_reads():
    assert sorted(trees.read_zip(good())) == [
        "agents/solo/agent.json",
        "agents/solo/persona.md",
        "project.json",
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_archive_is_refused_by_name_and_changes_nothing(case: str):
    build, expected = BROKEN[case]
    with pytest.raises(services.LibraryError) as refused:
        services.import_zip(build(), name="broken", origin="upload.zip")
    message = str(refused.value)
    assert message.startswith("upload.zip: "), message
    assert expected in message, message
    assert not Scenario.objects.exists()


@pytest.mark.parametrize(
    "name", ["agents/solo/a\x01b.md", "agents/solo/tab\there.md", "agents/solo/x.md\n"]
)
def test_control_characters_in_a_name_are_refused(name: str):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("project.json", b"{}")
        archive.writestr(name, b"x")
    with pytest.raises(trees.PackageTreeError, match="control character"):
        trees.read_zip(buffer.getvalue())


_SEED = good()


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    st.lists(
        st.tuples(st.integers(0, len(_SEED) - 1), st.integers(0, 255)), min_size=1, max_size=8
    ),
    st.integers(0, len(_SEED)),
)
def test_a_mangled_archive_is_read_or_refused_never_crashes(flips, cut):
    data = bytearray(_SEED[:cut] if cut > 40 else _SEED)
    for offset, value in flips:
        if offset < len(data):
            data[offset] = value
    try:
        files = trees.read_zip(bytes(data))
    except trees.PackageTreeError:
        return
    # What it reads must be writable as a package folder.
    assert all(0 < len(name) <= trees.MAX_PATH_CHARS for name in files)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("document", "what"),
    [
        (b'{"metadata": {"name": "Ti\\ud800ny"}}', "surrogate"),
        (b'{"metadata": {"name": "Ti\\u0000ny"}}', "NUL"),
        (b'metadata:\n  name: "Ti\\0ny"\n', "NUL"),
    ],
)
def test_a_manifest_string_no_database_keeps_is_a_located_error(document: bytes, what: str):
    name = "project.yaml" if document.startswith(b"metadata") else "project.json"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, document)
        archive.writestr("agents/solo/agent.json", b'{"id": "solo"}')
    scenario = services.import_zip(buffer.getvalue(), name="odd")
    assert scenario.valid is False
    errors = " ".join(scenario.validation["errors"])
    assert f"{name}: metadata.name" in errors and what in errors, errors


@pytest.mark.django_db
def test_a_text_file_with_a_nul_is_skipped_and_reported():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("project.json", b'{"metadata": {"name": "Tiny"}}')
        archive.writestr("agents/solo/agent.json", b'{"id": "solo"}')
        archive.writestr("agents/solo/persona.md", b"You are \x00 solo.")
    scenario = services.import_zip(buffer.getvalue(), name="nulpersona")
    text = json.dumps(scenario.validation)
    assert "persona.md" in text and "NUL" in text, text
