"""The skills library over HTTP: built-in skills read-only, user skills under BEARPIT_HOME."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from realms.library import files as trees
from realms.skills import builtin

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-skills-0123"
NOTES = "---\nname: notes\ndescription: Keep notes.\n---\nWrite down what you learn.\n"


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"
    settings.BEARPIT_API_TOKEN = TOKEN


@pytest.fixture
def user_dir(settings) -> Path:
    return Path(settings.BEARPIT_HOME) / "skills"


def auth() -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}


def state(root: Path) -> dict[str, bytes]:
    """Every file under the user skills folder, to show a refused write changed nothing."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def create(client, body: object):
    return client.post(
        "/api/skills", data=json.dumps(body), content_type="application/json", **auth()
    )


def test_the_skills_library_needs_the_token(client):
    assert client.get("/api/skills").status_code == 401


def test_builtins_are_listed_with_their_front_matter(client):
    listed = client.get("/api/skills", **auth()).json()["skills"]
    assert [(s["source"], s["ref"]) for s in listed] == [("builtin", n) for n in builtin.names()]
    basics = next(s for s in listed if s["ref"] == "agent-basics")
    assert basics == {
        "source": "builtin",
        "ref": "agent-basics",
        "name": "agent-basics",
        "description": builtin.doc("agent-basics").description,
        "files": ["SKILL.md"],
        "editable": False,
    }
    detail = client.get("/api/skills/builtin/agent-basics", **auth()).json()
    assert detail["text"] == (builtin.BUILTIN_DIR / "agent-basics" / "SKILL.md").read_text()
    file = client.get("/api/skills/builtin/agent-basics/file?path=SKILL.md", **auth())
    assert file.status_code == 200
    assert file.content.decode() == detail["text"]


def test_create_read_export_and_delete_a_user_skill(client, user_dir):
    created = create(client, {"ref": "notes", "text": NOTES})
    assert created.status_code == 201, created.content
    assert created.json()["source"] == "user"
    assert created.json()["description"] == "Keep notes."
    assert (user_dir / "notes" / "SKILL.md").read_text() == NOTES

    listed = client.get("/api/skills", **auth()).json()["skills"]
    assert ("user", "notes", True) in [(s["source"], s["ref"], s["editable"]) for s in listed]
    assert client.get("/api/skills/user/notes", **auth()).json()["text"] == NOTES

    exported = client.get("/api/skills/user/notes/export", **auth())
    assert exported["Content-Type"] == "application/zip"
    assert trees.read_zip(exported.content) == {"SKILL.md": NOTES.encode()}

    again = create(client, {"ref": "notes", "text": "other"})
    assert again.status_code == 409
    assert (user_dir / "notes" / "SKILL.md").read_text() == NOTES

    assert client.delete("/api/skills/notes", **auth()).status_code == 204
    assert not (user_dir / "notes").exists()
    assert client.delete("/api/skills/notes", **auth()).status_code == 404


def test_builtins_cannot_be_deleted(client):
    response = client.delete("/api/skills/agent-basics", **auth())
    assert response.status_code == 409
    assert "built-in skills cannot be deleted" in response.json()["error"]
    assert (builtin.BUILTIN_DIR / "agent-basics" / "SKILL.md").is_file()


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ({"text": NOTES}, "ref"),
        ({"ref": "notes"}, "text"),
        ({"ref": "notes", "text": 5}, "text"),
        ({"ref": "Bad Ref", "text": NOTES}, "error"),
        ({"ref": "../up", "text": NOTES}, "error"),
        ({"ref": "notes", "text": "---\nname: [unclosed\n---\nbody"}, "error"),
        ({"ref": "notes", "text": "---\nname: notes\n---\n"}, "error"),
        ([1], "non_field_errors"),
    ],
)
def test_a_bad_create_body_is_a_located_400_and_changes_nothing(client, user_dir, body, where):
    before = state(user_dir)
    response = create(client, body)
    assert response.status_code == 400, response.content
    assert where in response.json(), response.json()
    assert state(user_dir) == before


def test_a_front_matter_error_names_its_line(client):
    response = create(client, {"ref": "notes", "text": "---\nname: ok\nbad: [x\n---\nbody"})
    assert response.status_code == 400
    assert "SKILL.md: the front matter is not valid YAML (line" in response.json()["error"]


@pytest.mark.parametrize(
    "path", ["../SKILL.md", "/etc/passwd", "..", "a/../../x", "a\\b", "missing.md"]
)
def test_file_paths_are_confined_to_the_skill(client, path):
    create(client, {"ref": "notes", "text": NOTES})
    response = client.get("/api/skills/user/notes/file", {"path": path}, **auth())
    assert response.status_code in (400, 404), response.content
    assert "error" in response.json()


def test_unknown_sources_and_refs(client, user_dir):
    assert client.get("/api/skills/gh/notes", **auth()).status_code == 404
    assert client.get("/api/skills/user/notes", **auth()).status_code == 404
    assert client.get("/api/skills/builtin/chess", **auth()).status_code == 404
    assert client.get("/api/skills/user/..%2Fx", **auth()).status_code in (400, 404)
    assert client.get("/api/skills/user/notes/file", **auth()).status_code == 400
    outside = user_dir.parent / "outside"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text("secret")
    user_dir.mkdir(parents=True, exist_ok=True)
    (user_dir / "linked").symlink_to(outside)
    assert client.get("/api/skills/user/linked", **auth()).status_code == 404
    assert "linked" not in [s["ref"] for s in client.get("/api/skills", **auth()).json()["skills"]]


def test_import_zip_takes_the_name_from_the_front_matter(client, user_dir):
    data = trees.build_zip({"SKILL.md": NOTES.encode(), "refs/table.md": b"| a |"}, top="folder")
    response = client.post(
        "/api/skills/import-zip", data=data, content_type="application/zip", **auth()
    )
    assert response.status_code == 201, response.content
    assert response.json()["ref"] == "notes"
    assert response.json()["files"] == ["SKILL.md", "refs/table.md"]
    assert (user_dir / "notes" / "refs" / "table.md").read_bytes() == b"| a |"
    table = client.get("/api/skills/user/notes/file?path=refs/table.md", **auth())
    assert table.content == b"| a |"

    renamed = client.post(
        "/api/skills/import-zip?ref=other", data=data, content_type="application/zip", **auth()
    )
    assert renamed.status_code == 201
    assert (user_dir / "other" / "SKILL.md").read_text() == NOTES


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"not a zip", "not a zip archive"),
        (trees.build_zip({"README.md": b"x"}), "a skill needs a SKILL.md"),
        (trees.build_zip({"SKILL.md": b"\xff\xfe"}), "not UTF-8"),
    ],
)
def test_a_bad_zip_is_refused_and_changes_nothing(client, user_dir, data, expected):
    create(client, {"ref": "notes", "text": NOTES})
    before = state(user_dir)
    response = client.post(
        "/api/skills/import-zip?ref=notes", data=data, content_type="application/zip", **auth()
    )
    assert response.status_code == 400, response.content
    assert expected in response.json()["error"]
    assert state(user_dir) == before


def test_import_folder_and_file(client, user_dir):
    response = client.post(
        "/api/skills/import-folder",
        data={
            "files": [
                SimpleUploadedFile("SKILL.md", NOTES.encode()),
                SimpleUploadedFile("x", b"1"),
            ],
            "paths": ["notes-dir/SKILL.md", "notes-dir/data/x"],
        },
        **auth(),
    )
    assert response.status_code == 201, response.content
    assert state(user_dir) == {"notes/SKILL.md": NOTES.encode(), "notes/data/x": b"1"}

    replaced = client.post(
        "/api/skills/import-file?ref=notes",
        data={"file": SimpleUploadedFile("SKILL.md", b"Just a text.")},
        **auth(),
    )
    assert replaced.status_code == 201, replaced.content
    assert state(user_dir) == {"notes/SKILL.md": b"Just a text."}


@pytest.mark.parametrize(
    ("paths", "expected"),
    [
        (["../SKILL.md"], "expected a relative path"),
        (["/abs/SKILL.md"], "expected a relative path"),
        (["dir/README.md"], "a skill needs a SKILL.md"),
    ],
)
def test_a_bad_folder_is_refused_and_changes_nothing(client, user_dir, paths, expected):
    create(client, {"ref": "notes", "text": NOTES})
    before = state(user_dir)
    response = client.post(
        "/api/skills/import-folder?ref=notes",
        data={"files": [SimpleUploadedFile("f", NOTES.encode())], "paths": paths},
        **auth(),
    )
    assert response.status_code == 400, response.content
    assert expected in response.json()["error"]
    assert state(user_dir) == before


def test_import_file_without_a_name_or_a_file(client, user_dir):
    nameless = client.post(
        "/api/skills/import-file",
        data={"file": SimpleUploadedFile("SKILL.md", b"no front matter")},
        **auth(),
    )
    assert nameless.status_code == 400
    assert "give ?ref=" in nameless.json()["error"]
    missing = client.post("/api/skills/import-file", data={}, **auth())
    assert missing.status_code == 400
    assert "file" in missing.json()
    assert state(user_dir) == {}
