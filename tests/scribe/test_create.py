"""A conversation that creates a valid 3-agent package, approved into the library."""

from __future__ import annotations

import pytest

from realms.library import services as library
from realms.models import Scenario
from scribe.models import ScribeSession
from tests.scribe.conftest import call, debate_files, kinds, step, writes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def test_conversation_creates_a_valid_three_agent_package(api, script) -> None:
    files = debate_files()
    script(
        [
            step(call("read_format_reference"), call("list_skills")),
            step(call("ask_user", question="Who should judge the debate?")),
            step(*writes(files)),
            step(call("validate_draft")),
            step(call("propose_draft", summary="debate: alice, bob and a judge")),
            step(text="Review the manifest and each persona, then approve."),
        ]
    )
    created = api.post("/api/scribe/session", {"mode": "create", "scenario": "debate"})
    assert created.status_code == 201, created.content
    session_id = created.json()["session_id"]

    first = api.say(session_id, "A debate between two agents, please.")
    assert kinds(first) == ["tool", "tool", "tool", "question", "done"]
    assert first[3]["text"] == "Who should judge the debate?"

    second = api.say(session_id, "A judge agent who rules.")
    assert [line["name"] for line in second if line["kind"] == "tool"][-2:] == [
        "validate_draft",
        "propose_draft",
    ]
    draft = next(line for line in second if line["kind"] == "draft")
    assert draft["text"] == "debate: alice, bob and a judge"
    assert second[-2] == {
        "kind": "text",
        "text": "Review the manifest and each persona, then approve.",
        "name": "",
    }
    assert second[-1]["kind"] == "done"

    # Proposed, not saved: the library has no such scenario until the user approves.
    assert not Scenario.objects.filter(name="debate").exists()
    view = api.get(f"/api/scribe/session/{session_id}").json()
    assert view["state"] == "proposed"
    assert view["files"] == dict(sorted(files.items()))
    assert view["validation"]["ok"] is True
    assert {d["path"]: d["status"] for d in view["diff"]} == {p: "added" for p in files}
    assert "+You argue for the motion." in next(
        d["diff"] for d in view["diff"] if d["path"] == "agents/alice/persona.md"
    )
    assert [h["kind"] for h in view["history"]][:2] == ["user", "question"]

    approved = api.post("/api/scribe/approve", {"session_id": session_id})
    assert approved.status_code == 200, approved.content
    assert approved.json() == {
        "session_id": session_id,
        "scenario": "debate",
        "source": "user",
        "valid": True,
    }
    saved = library.resolve("debate")
    assert saved.source == Scenario.Source.USER
    result = library.load_scenario(saved)
    assert result.ok, result.errors
    assert result.project is not None
    assert sorted(agent.id for agent in result.project.agents) == ["alice", "bob", "judge"]
    assert library.scenario_files(saved) == {p: t.encode() for p, t in files.items()}
    assert ScribeSession.objects.get(session_id=session_id).state == "approved"
    again = api.post("/api/scribe/approve", {"session_id": session_id})
    assert again.status_code == 409


def test_bad_requests_are_refused_with_located_errors(api, script) -> None:
    script([step(text="hello")])
    assert api.post("/api/scribe/session", {"mode": "rewrite"}).status_code == 400
    missing = api.post("/api/scribe/session", {"mode": "edit"})
    assert missing.status_code == 400 and "scenario" in missing.json()
    unknown = api.post("/api/scribe/session", {"mode": "edit", "scenario": "nope"})
    assert unknown.status_code == 400 and "nope" in unknown.json()["error"]
    taken = api.post("/api/scribe/session", {"mode": "create", "scenario": "toolcheck"})
    assert taken.status_code == 400 and "already in the library" in taken.json()["error"]
    nosuch = api.post("/api/scribe/message", {"session_id": "0" * 16, "text": "hi"})
    assert nosuch.status_code == 404
    assert api.get("/api/scribe/session/" + "0" * 16).status_code == 404
    assert ScribeSession.objects.count() == 0
    assert api.client.post("/api/scribe/session", {"mode": "create"}).status_code == 401


def test_the_reply_streams_over_the_platforms_asgi_server(api, script) -> None:
    import json

    import httpx

    from bearpit.server import PlatformServer
    from tests.scribe.conftest import TOKEN

    script([step(call("list_draft")), step(call("ask_user", question="How many agents?"))])
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    with (
        PlatformServer() as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
        http.stream(
            "POST",
            "/api/scribe/message",
            json={"session_id": session_id, "text": "hi"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/x-ndjson"
        lines = [json.loads(line) for line in response.iter_lines() if line]
    assert kinds(lines) == ["tool", "tool", "question", "done"]
    assert lines[2]["text"] == "How many agents?"
