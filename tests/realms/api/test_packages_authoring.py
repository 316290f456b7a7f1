"""Creating, saving, validating, deleting and folder-importing packages over the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from realms.models import Scenario, ScenarioFile
from tests.conftest import REPO

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-authoring-0123"
TOOLCHECK = REPO / "examples" / "toolcheck"
PONG = "agents/pong/agent.json"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_API_TOKEN = TOKEN
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "toolcheck").symlink_to(TOOLCHECK)
    settings.BEARPIT_EXAMPLES_DIR = examples


def auth() -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


def texts(root: Path = TOOLCHECK) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def snapshot() -> list[tuple[str, str, str, bytes]]:
    """Every stored file of every scenario, to show a refused write changed nothing."""
    return [
        (f.scenario.name, f.scenario.source, f.path, bytes(f.content))
        for f in ScenarioFile.objects.select_related("scenario").order_by(
            "scenario__name", "scenario__source", "path"
        )
    ]


def send(client, method: str, url: str, body: object):
    call = getattr(client, method)
    return call(url, data=json.dumps(body), content_type="application/json", **auth())


def bad_pong() -> dict[str, str]:
    files = texts()
    files[PONG] = (
        "{\n"
        '  "id": "pong",\n'
        '  "model_category": "small",\n'
        '  "budget": {\n'
        '    "max_usd": 0.5,\n'
        '    "on_exhausted": "explode"\n'
        "  }\n"
        "}\n"
    )
    return files


def test_create_from_a_files_map_then_save_and_delete(client):
    created = send(client, "post", "/api/packages", {"name": "mine", "files": texts()})
    assert created.status_code == 201, created.content
    assert created.json()["source"] == "user"
    assert created.json()["agents"] == ["ping", "pong", "umpire"]

    files = texts()
    files["README.md"] = "edited\n"
    saved = send(client, "put", "/api/packages/mine", {"files": files})
    assert saved.status_code == 200, saved.content
    readme = ScenarioFile.objects.get(scenario__name="mine", path="README.md")
    assert bytes(readme.content) == b"edited\n"

    assert client.delete("/api/packages/mine", **auth()).status_code == 204
    assert not Scenario.objects.filter(name="mine").exists()
    assert client.delete("/api/packages/mine", **auth()).status_code == 404


def test_clone_of_an_example_and_a_taken_name(client):
    created = send(client, "post", "/api/packages", {"name": "copy", "clone_of": "toolcheck"})
    assert created.status_code == 201, created.content
    assert {f.path for f in Scenario.objects.get(name="copy").files.all()} == set(texts())

    before = snapshot()
    taken = send(client, "post", "/api/packages", {"name": "toolcheck", "files": texts()})
    assert taken.status_code == 409
    assert "already in the library" in taken.json()["error"]
    ghost = send(client, "post", "/api/packages", {"name": "other", "clone_of": "ghost"})
    assert ghost.status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"files": {"project.json": "{}"}}, "name"),
        ({"name": "x"}, "body"),
        ({"name": "x", "files": {"a": "b"}, "clone_of": "toolcheck"}, "body"),
        ({"name": "x", "files": {"a": 3}}, "files"),
        ({"name": "x", "files": {}}, "files"),
        ({"name": "bad name!", "files": texts()}, "error"),
        ([1, 2], "non_field_errors"),
    ],
)
def test_a_bad_create_body_is_a_located_400(client, body, where):
    client.get("/api/packages", **auth())
    before = snapshot()
    response = send(client, "post", "/api/packages", body)
    assert response.status_code == 400, response.content
    assert where in response.json(), response.json()
    assert snapshot() == before


def test_saving_an_invalid_package_lists_every_located_error_and_changes_nothing(client):
    client.get("/api/packages", **auth())
    before = snapshot()
    files = bad_pong()
    files["agents/ping/agent.json"] = '{"id": "ping", "colour": "#ff0000"}'
    response = send(client, "put", "/api/packages/toolcheck", {"files": files})
    assert response.status_code == 400, response.content
    body = response.json()
    assert "nothing was saved" in body["error"]
    by_file = {(e["file"], e["path"]): e for e in body["errors"]}
    exhausted = by_file[(PONG, "budget.on_exhausted")]
    assert exhausted["line"] == 6
    assert "starve_then_kill" in exhausted["message"]
    assert exhausted["text"].startswith(f"{PONG}: budget.on_exhausted: ")
    assert ("agents/ping/agent.json", "colour") in by_file
    assert snapshot() == before
    assert not Scenario.objects.filter(name="toolcheck", source="user").exists()


def test_saving_an_example_writes_a_user_copy_and_deleting_it_reveals_the_example(client):
    # No listing first: saving finds the bundled example by itself.
    files = texts()
    files["README.md"] = "my notes\n"
    assert send(client, "put", "/api/packages/toolcheck", {"files": files}).status_code == 200
    listed = client.get("/api/packages", **auth()).json()["packages"]
    assert [(p["name"], p["source"]) for p in listed] == [("toolcheck", "user")]
    example = Scenario.objects.get(name="toolcheck", source="example")
    assert b"my notes" not in bytes(example.files.get(path="README.md").content)

    assert client.delete("/api/packages/toolcheck", **auth()).status_code == 204
    listed = client.get("/api/packages", **auth()).json()["packages"]
    assert [(p["name"], p["source"]) for p in listed] == [("toolcheck", "example")]
    refused = client.delete("/api/packages/toolcheck", **auth())
    assert refused.status_code == 409
    assert Scenario.objects.filter(name="toolcheck", source="example").exists()


def test_saving_an_unknown_name_is_404(client):
    response = send(client, "put", "/api/packages/ghost", {"files": texts()})
    assert response.status_code == 404
    assert not Scenario.objects.filter(name="ghost").exists()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("../escape.md", "expected a relative path inside the package"),
        ("/etc/passwd", "expected a relative path inside the package"),
        ("agents/../../x", "expected a relative path inside the package"),
        ("a\\b", "expected a relative path inside the package"),
        ("bad\x01name", "control character"),
    ],
)
def test_path_escapes_in_a_files_map_are_refused(client, path, expected):
    client.get("/api/packages", **auth())
    before = snapshot()
    files = {**texts(), path: "x"}
    for method, url in (("put", "/api/packages/toolcheck"), ("post", "/api/packages/validate")):
        response = send(client, method, url, {"files": files})
        assert response.status_code == 400, response.content
        assert expected in response.json()["files"], response.json()
    created = send(client, "post", "/api/packages", {"name": "esc", "files": files})
    assert created.status_code == 400
    assert snapshot() == before


def test_validate_gives_lines_for_parse_errors_and_fields_and_keeps_nothing(client):
    files = texts()
    files["project.json"] = '{\n  "metadata": {"name": "x"},\n  "spec": {\n    oops\n}\n'
    response = send(client, "post", "/api/packages/validate", {"files": files})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is False
    [error] = [e for e in body["errors"] if e["file"] == "project.json"]
    assert error["line"] == 4

    response = send(client, "post", "/api/packages/validate", {"files": bad_pong()})
    errors = response.json()["errors"]
    assert [(e["file"], e["path"], e["line"]) for e in errors] == [(PONG, "budget.on_exhausted", 6)]
    ok = send(client, "post", "/api/packages/validate", {"files": texts()}).json()
    assert ok["ok"] is True
    assert ok["errors"] == []
    assert not Scenario.objects.exists()


def folder_upload(client, files: dict[str, bytes], **extra: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data: dict[str, object] = {
        "files": [SimpleUploadedFile(Path(p).name, content) for p, content in files.items()],
        "paths": list(files),
        **extra,
    }
    return client.post("/api/packages/import", data=data, **auth())


def test_a_folder_upload_keeps_the_folder_file_for_file(client):
    files = {f"toolcheck-copy/{p}": t.encode() for p, t in texts().items()}
    response = folder_upload(client, files)
    assert response.status_code == 201, response.content
    assert response.json()["name"] == "toolcheck-copy"
    assert response.json()["validation"]["ok"] is True
    stored = {
        f.path: bytes(f.content) for f in Scenario.objects.get(name="toolcheck-copy").files.all()
    }
    assert stored == {p: t.encode() for p, t in texts().items()}


@pytest.mark.parametrize(
    ("files", "extra", "expected"),
    [
        ({"../up/project.json": b"{}"}, {"name": "x"}, "expected a relative path"),
        ({"/abs/project.json": b"{}"}, {"name": "x"}, "expected a relative path"),
        ({"project.json": b"{}"}, {}, "required when the files share no folder"),
        ({f"f{i}.txt": b"x" for i in range(501)}, {"name": "x"}, "too many"),
        ({"big.bin": b"x" * (5 * 1024 * 1024 + 1)}, {"name": "x"}, "5 MB"),
    ],
)
def test_a_bad_folder_upload_is_refused_and_changes_nothing(client, files, extra, expected):
    response = folder_upload(client, files, **extra)
    assert response.status_code == 400, response.content[:300]
    assert expected in json.dumps(response.json()), response.json()
    assert not Scenario.objects.exists()


def test_a_folder_upload_needs_a_path_per_file(client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    response = client.post(
        "/api/packages/import",
        data={"files": [SimpleUploadedFile("a", b"x")], "name": "x"},
        **auth(),
    )
    assert response.status_code == 400
    assert "one path per file" in response.json()["paths"]
    assert not Scenario.objects.exists()
