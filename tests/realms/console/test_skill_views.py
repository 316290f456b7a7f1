"""The skills pages through Django's test client: listing, reading, and every refused
import or delete leaving the skills library as it was."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from realms.skills.user import user_root

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

SKILL = b"---\nname: haggler\ndescription: Bargain hard.\n---\nOpen low, <b>concede</b> slowly.\n"


@pytest.fixture(autouse=True)
def _home(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path / "home"


def user_files() -> dict[str, bytes]:
    root = user_root()
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data)


def zip_of(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_anonymous_browsers_are_refused(client):
    assert client.get("/skills/").status_code == 403
    response = client.post("/skills/import", {"upload": upload("SKILL.md", SKILL)})
    assert response.status_code == 403
    assert user_files() == {}


def test_a_skill_md_is_imported_shown_escaped_and_deleted(operator):
    response = operator.post("/skills/import", {"upload": upload("SKILL.md", SKILL)})
    assert response.status_code == 302
    assert response["Location"] == "/skills/user/haggler/"
    assert user_files() == {"haggler/SKILL.md": SKILL}
    listing = operator.get("/skills/").content.decode()
    assert "Bargain hard." in listing and "agent-basics" in listing
    page = operator.get("/skills/user/haggler/").content.decode()
    assert "&lt;b&gt;concede&lt;/b&gt;" in page and "<b>concede</b>" not in page
    exported = operator.get("/skills/user/haggler/export")
    assert exported["Content-Disposition"] == 'attachment; filename="haggler.zip"'
    assert operator.post("/skills/user/haggler/delete").status_code == 302
    assert user_files() == {}


def test_refused_imports_change_nothing(operator):
    operator.post("/skills/import", {"upload": upload("SKILL.md", SKILL)})
    before = user_files()
    escape = zip_of({"SKILL.md": SKILL, "../../outside": b"x"})
    refused = operator.post("/skills/import", {"upload": upload("evil.zip", escape)})
    assert refused.status_code == 400
    assert "relative path inside the package" in refused.content.decode()
    junk = operator.post("/skills/import", {"upload": upload("junk.zip", b"nope")})
    assert junk.status_code == 400 and "not a zip archive" in junk.content.decode()
    bad_ref = operator.post("/skills/import", {"upload": upload("SKILL.md", SKILL), "ref": "../up"})
    assert bad_ref.status_code == 400 and "skill ref" in bad_ref.content.decode()
    again = operator.post(
        "/skills/import", {"upload": upload("SKILL.md", SKILL.replace(b"slowly", b"never"))}
    )
    assert again.status_code == 400 and "tick replace" in again.content.decode()
    empty = operator.post("/skills/import", {"upload": upload("SKILL.md", b"---\nname: x\n---\n")})
    assert empty.status_code == 400 and "no text" in empty.content.decode()
    nothing = operator.post("/skills/import", {})
    assert nothing.status_code == 400 and "choose a skill" in nothing.content.decode()
    assert user_files() == before
    assert not (Path(user_root()).parent / "outside").exists()


def test_builtins_cannot_be_deleted_and_bad_refs_are_not_found(operator):
    refused = operator.post("/skills/user/agent-basics/delete", follow=True)
    assert "built-in skills cannot be deleted" in refused.content.decode()
    assert operator.get("/skills/builtin/agent-basics/").status_code == 200
    assert operator.get("/skills/builtin/nope/").status_code == 404
    assert operator.get("/skills/other/agent-basics/").status_code == 404
    assert operator.get("/skills/user/..%2F..%2Fetc/").status_code in (400, 404)


def test_deleting_asks_first(operator):
    operator.post("/skills/import", {"upload": upload("SKILL.md", SKILL)})
    asked = operator.get("/skills/user/haggler/delete")
    assert asked.status_code == 200 and b"Delete the skill haggler?" in asked.content
    assert user_files() == {"haggler/SKILL.md": SKILL}
    assert operator.get("/skills/user/nope/delete").status_code == 404
