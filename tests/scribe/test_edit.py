"""A conversation that edits an existing package: the diff, then a user copy on approval."""

from __future__ import annotations

import pytest

from realms.library import services as library
from realms.models import Scenario
from scribe.models import ScribeSession
from tests.scribe.conftest import call, kinds, step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

PERSONA = "# Ping\n\nYou are Ping, terse and exact. You follow the numbered steps.\n"


def test_edit_changes_one_persona_and_saves_a_user_copy(api, script) -> None:
    script(
        [
            step(call("list_draft"), call("read_draft_file", path="agents/ping/persona.md")),
            step(call("write_draft_file", path="agents/ping/persona.md", content=PERSONA)),
            step(call("propose_draft", summary="ping is terser")),
            step(text="Ping's persona is shorter now."),
        ]
    )
    created = api.post("/api/scribe/session", {"mode": "edit", "scenario": "toolcheck"})
    assert created.status_code == 201, created.content
    body = created.json()
    session_id = body["session_id"]
    example = library.resolve("toolcheck")
    original = library.scenario_files(example)
    # The draft starts as every file of the saved package, and nothing differs yet.
    assert body["version"] == 1
    assert body["files"] == {p: c.decode() for p, c in original.items()}
    assert {d["status"] for d in body["diff"]} == {"same"}

    lines = api.say(session_id, "Make ping terser.")
    assert kinds(lines) == ["tool", "tool", "tool", "tool", "draft", "text", "done"]
    assert lines[1]["text"] == "read_draft_file agents/ping/persona.md"
    # The model read the saved persona through its own tool.
    results = [
        m["content"]
        for m in ScribeSession.objects.get(session_id=session_id).messages
        if m["role"] == "tool"
    ]
    assert "You are Ping, the first runner" in results[1]

    view = api.get(f"/api/scribe/session/{session_id}").json()
    changed = {d["path"]: d for d in view["diff"] if d["status"] != "same"}
    assert list(changed) == ["agents/ping/persona.md"]
    assert changed["agents/ping/persona.md"]["status"] == "changed"
    assert "+You are Ping, terse and exact." in changed["agents/ping/persona.md"]["diff"]
    assert "-You are Ping, the first runner" in changed["agents/ping/persona.md"]["diff"]
    # Nothing saved before approval: the library still means the example.
    assert library.resolve("toolcheck").source == Scenario.Source.EXAMPLE

    approved = api.post("/api/scribe/approve", {"session_id": session_id})
    assert approved.status_code == 200, approved.content
    saved = library.resolve("toolcheck")
    assert saved.source == Scenario.Source.USER
    files = library.scenario_files(saved)
    assert files["agents/ping/persona.md"] == PERSONA.encode()
    assert {p: c for p, c in files.items() if p != "agents/ping/persona.md"} == {
        p: c for p, c in original.items() if p != "agents/ping/persona.md"
    }
    # The bundled example is kept as it was, shadowed by the user's copy.
    example.refresh_from_db()
    assert library.scenario_files(example) == original
