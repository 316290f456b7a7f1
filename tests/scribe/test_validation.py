"""Scribe fixes the validation errors and contract warnings of its draft before proposing."""

from __future__ import annotations

import json

import pytest

from scribe.models import ScribeSession
from scribe.services.contract import contract_warnings
from tests.scribe.conftest import call, debate_files, kinds, step, writes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _tool_results(session_id: str) -> list[str]:
    session = ScribeSession.objects.get(session_id=session_id)
    return [m["content"] for m in session.messages if m["role"] == "tool"]


def test_errors_are_fixed_before_the_draft_is_proposed(api, script) -> None:
    broken = debate_files(contract=False, bad_budget=True)
    fixed = debate_files()
    script(
        [
            step(*writes(broken)),
            step(call("validate_draft")),
            step(call("propose_draft", summary="too early")),
            step(
                call("write_draft_file", path="project.json", content=fixed["project.json"]),
                call(
                    "write_draft_file",
                    path="agents/alice/agent.json",
                    content=fixed["agents/alice/agent.json"],
                ),
            ),
            step(call("validate_draft")),
            step(call("propose_draft", summary="fixed")),
            step(text="Fixed and proposed."),
        ]
    )
    session_id = api.post("/api/scribe/session", {"mode": "create", "scenario": "debate"}).json()[
        "session_id"
    ]
    lines = api.say(session_id, "A debate.")
    drafts = [line for line in lines if line["kind"] == "draft"]
    assert [d["text"] for d in drafts] == ["fixed"]

    results = _tool_results(session_id)
    first_check = json.loads(results[len(broken)])
    assert first_check["ok"] is False
    located = {(e["file"], e["path"]) for e in first_check["errors"]}
    assert ("agents/alice/agent.json", "budget.on_exhausted") in located
    assert any(e["line"] for e in first_check["errors"])
    contract = [w for w in first_check["warnings"] if w.get("contract")]
    assert {w["message"].split("'")[1] for w in contract} == {"duration", "stall"}
    refusal = results[len(broken) + 1]
    assert refusal.startswith("not proposed: fix these first")
    assert "budget.on_exhausted" in refusal and "'stall'" in refusal

    second_check = json.loads(results[len(broken) + 4])
    assert second_check["ok"] is True
    assert not [w for w in second_check["warnings"] if w.get("contract")]
    view = api.get(f"/api/scribe/session/{session_id}").json()
    assert view["state"] == "proposed"
    assert view["proposed_version"] == view["version"]
    assert api.post("/api/scribe/approve", {"session_id": session_id}).status_code == 200


def test_a_draft_that_never_validates_is_reported_after_three_tries(api, script) -> None:
    broken = debate_files(bad_budget=True)
    script(
        [
            step(*writes(broken)),
            step(call("propose_draft", summary="1")),
            step(call("propose_draft", summary="2")),
            step(call("propose_draft", summary="3")),
            step(text="unreachable"),
        ]
    )
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    lines = api.say(session_id, "A debate.")
    assert "draft" not in kinds(lines)
    errors = [line for line in lines if line["kind"] == "error"]
    assert len(errors) == 1
    assert "does not validate after 3 proposals" in errors[0]["text"]
    assert "unreachable" not in [line["text"] for line in lines]
    view = api.get(f"/api/scribe/session/{session_id}").json()
    assert view["files"] == dict(sorted(broken.items()))  # the draft is kept as it was
    assert view["validation"]["ok"] is False
    assert api.post("/api/scribe/approve", {"session_id": session_id}).status_code == 409


def test_the_contract_asks_for_duration_and_stall_with_turns_or_a_referee() -> None:
    files = debate_files(contract=False)
    assert len(contract_warnings(files)) == 2
    assert contract_warnings(debate_files()) == []
    players_only = {p: t for p, t in files.items() if "judge" not in p}
    assert contract_warnings(players_only) == []
    project = json.loads(players_only["project.json"])
    project["spec"]["turns"] = {"policy": "one-at-a-time"}
    turns = {**players_only, "project.json": json.dumps(project)}
    assert [w["path"] for w in contract_warnings(turns)] == ["spec.termination"] * 2
