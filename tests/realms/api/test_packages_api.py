from __future__ import annotations

import json
from pathlib import Path

import pytest

from realms.library import files as trees
from realms.models import Scenario
from tests.conftest import REPO
from tests.fixtures.compat import COMPAT
from tests.realms.library.badzips import BROKEN

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-packages-0123"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_API_TOKEN = TOKEN
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "toolcheck").symlink_to(REPO / "examples" / "toolcheck")
    settings.BEARPIT_EXAMPLES_DIR = examples


def auth() -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_library_needs_the_token(client):
    assert client.get("/api/packages").status_code == 401


@pytest.mark.compat
def test_examples_are_listed_and_a_user_copy_shadows_one(client):
    listed = client.get("/api/packages", **auth()).json()["packages"]
    assert [(p["name"], p["source"], p["editable"]) for p in listed] == [
        ("toolcheck", "example", False)
    ]
    assert listed[0]["agents"] == ["ping", "pong", "umpire"]

    upload = trees.build_zip(tree(COMPAT / "param-relay"), top="param-relay")
    created = client.post(
        "/api/packages/import-zip?name=toolcheck",
        data=upload,
        content_type="application/zip",
        **auth(),
    )
    assert created.status_code == 201, created.content
    assert created.json()["source"] == "user"
    listed = client.get("/api/packages", **auth()).json()["packages"]
    assert [(p["name"], p["source"]) for p in listed] == [("toolcheck", "user")]
    assert listed[0]["agents"] == ["alto", "basso", "warden"]


@pytest.mark.compat
def test_detail_parameters_and_export(client):
    client.get("/api/packages", **auth())
    detail = client.get("/api/packages/toolcheck", **auth()).json()
    assert detail["validation"]["ok"] is True
    assert "agents/umpire/agent.json" in detail["files"]

    upload = trees.build_zip(tree(COMPAT / "param-relay"), top="param-relay")
    client.post(
        "/api/packages/import-zip?name=param-relay",
        data=upload,
        content_type="application/zip",
        **auth(),
    )
    params = client.get("/api/packages/param-relay/parameters", **auth()).json()["parameters"]
    assert {"seed_word", "tone", "category"} <= {p["name"] for p in params}

    exported = client.get("/api/packages/param-relay/export", **auth())
    assert exported["Content-Type"] == "application/zip"
    assert trees.read_zip(exported.content) == tree(COMPAT / "param-relay")


def test_a_broken_upload_is_refused_and_changes_nothing(client):
    response = client.post(
        "/api/packages/import-zip?name=junk",
        data=b"not a zip",
        content_type="application/zip",
        **auth(),
    )
    assert response.status_code == 400
    assert "not a zip archive" in json.dumps(response.json())
    assert not Scenario.objects.filter(name="junk").exists()


def test_unknown_names_and_deleting_examples(client):
    client.get("/api/packages", **auth())
    assert client.get("/api/packages/ghost", **auth()).status_code == 404
    refused = client.delete("/api/packages/toolcheck", **auth())
    assert refused.status_code == 409
    assert "examples cannot be deleted" in refused.json()["error"]
    assert Scenario.objects.filter(name="toolcheck", source="example").exists()


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_every_broken_zip_is_a_located_400_and_changes_nothing(client, case):
    build, expected = BROKEN[case]
    response = client.post(
        "/api/packages/import-zip?name=broken",
        data=build(),
        content_type="application/zip",
        **auth(),
    )
    assert response.status_code == 400, response.content[:300]
    assert expected in response.json()["file"], response.json()
    assert not Scenario.objects.filter(name="broken").exists()


def test_an_archive_over_the_limit_is_refused_before_it_is_read(client):
    response = client.post(
        "/api/packages/import-zip?name=big",
        data=b"PK" + b"\0" * (trees.MAX_TOTAL_BYTES + 10),
        content_type="application/zip",
        **auth(),
    )
    assert response.status_code in (400, 413)
    assert "5 MB" in json.dumps(response.json())
