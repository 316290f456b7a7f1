"""Scribe never writes to the library without approval, and only ever its own draft."""

from __future__ import annotations

import pytest

from ledger.models import Credential, LedgerSetting
from realms.library import services as library
from realms.models import Scenario, ScenarioFile
from scribe.models import DraftVersion, ScribeSession
from tests.scribe.conftest import call, debate_files, kinds, step, writes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _library_state() -> list[tuple[str, str, str, bytes]]:
    return sorted(
        (f.scenario.name, f.scenario.source, f.path, bytes(f.content))
        for f in ScenarioFile.objects.select_related("scenario")
    )


def test_no_write_without_approval(api, script) -> None:
    """A written, valid draft stays a draft until it is proposed and the user approves."""
    script([step(*writes(debate_files())), step(text="Written; shall I propose it?")])
    session_id = api.post("/api/scribe/session", {"mode": "create", "scenario": "debate"}).json()[
        "session_id"
    ]
    before = _library_state()
    lines = api.say(session_id, "Write the debate.")
    assert "draft" not in kinds(lines)
    assert DraftVersion.objects.filter(session__session_id=session_id).count() == 6
    assert _library_state() == before
    assert not Scenario.objects.filter(name="debate").exists()

    # Valid but never proposed: approval is refused and nothing is saved.
    refused = api.post("/api/scribe/approve", {"session_id": session_id})
    assert refused.status_code == 409
    assert "not proposed" in refused.json()["error"]
    assert _library_state() == before
    assert ScribeSession.objects.get(session_id=session_id).state == "open"


def test_a_change_after_the_proposal_needs_proposing_again(api, script) -> None:
    files = debate_files()
    script(
        [
            step(*writes(files), call("propose_draft", summary="first")),
            step(text="Proposed."),
            step(call("write_draft_file", path="agents/bob/persona.md", content="# Bob\n")),
            step(text="Changed bob."),
        ]
    )
    session_id = api.post("/api/scribe/session", {"mode": "create", "scenario": "debate"}).json()[
        "session_id"
    ]
    assert "draft" in kinds(api.say(session_id, "Write the debate."))
    assert "draft" not in kinds(api.say(session_id, "Shorter bob."))
    refused = api.post("/api/scribe/approve", {"session_id": session_id})
    assert refused.status_code == 409
    assert not Scenario.objects.filter(name="debate").exists()


def test_a_write_outside_the_scenario_is_refused_and_shown(api, script, tmp_path) -> None:
    outside = tmp_path / "outside.txt"
    attempts = [
        "../toolcheck/project.json",
        "/etc/bearpit-scribe-test",
        str(outside),
        "agents/../../keystore.key",
        "..\\settings.py",
        "C:/Windows/x",
        ".",
        "",
    ]
    script(
        [
            step(*[call("write_draft_file", path=p, content="owned") for p in attempts]),
            step(call("delete_draft_file", path="../toolcheck/project.json")),
            step(text="I could not write those."),
        ]
    )
    session_id = api.post("/api/scribe/session", {"mode": "create", "scenario": "debate"}).json()[
        "session_id"
    ]
    before = _library_state()
    keys_before = list(Credential.objects.values_list("handle", "encrypted_key"))
    settings_before = list(LedgerSetting.objects.values_list("key", "value"))
    lines = api.say(session_id, "Write into toolcheck and the settings.")
    errors = [line for line in lines if line["kind"] == "error"]
    assert len(errors) == len(attempts) + 1
    for line in errors:
        assert line["text"].startswith("refused:"), line
        assert "only writes files of this scenario" in line["text"]
    assert {line["name"] for line in errors} == {"write_draft_file", "delete_draft_file"}
    # Refused, so written nowhere: no draft version, no library change, no file.
    assert DraftVersion.objects.filter(session__session_id=session_id).count() == 0
    assert _library_state() == before
    assert not outside.exists()
    assert list(Credential.objects.values_list("handle", "encrypted_key")) == keys_before
    assert list(LedgerSetting.objects.values_list("key", "value")) == settings_before
    # The model was told too, in its tool results.
    session = ScribeSession.objects.get(session_id=session_id)
    results = [m["content"] for m in session.messages if m["role"] == "tool"]
    assert all(r.startswith("refused:") for r in results)
    assert library.resolve("toolcheck").source == Scenario.Source.EXAMPLE


def test_malformed_tool_calls_are_shown_plainly(api, script) -> None:
    script(
        [
            step({"name": "write_draft_file", "arguments": "{not json"}),
            step(call("save_settings", provider="evil")),
            step({"name": "validate_draft", "arguments": "[1, 2]"}),
            step(text="unreachable"),
        ]
    )
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    lines = api.say(session_id, "go")
    errors = [line["text"] for line in lines if line["kind"] == "error"]
    assert errors[:3] == [
        "the model called write_draft_file with arguments that are not JSON",
        "the model called a tool that does not exist: 'save_settings'",
        "the model called validate_draft with arguments that are not an object",
    ]
    assert errors[3] == "stopped: 3 malformed tool calls in one reply"
    assert "unreachable" not in [line["text"] for line in lines]
    assert kinds(lines)[-1] == "done"


def test_a_second_message_waits_for_the_running_reply(api, script) -> None:
    from scribe.services import conversation

    script([step(call("list_draft")), step(text="one"), step(text="two")])
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    session = conversation.start_message(session_id, "first")
    lines = conversation.reply(session)
    assert next(lines)["kind"] == "tool"  # the reply is running, held mid-way
    busy = api.post("/api/scribe/message", {"session_id": session_id, "text": "second"})
    assert busy.status_code == 409
    assert "still replying" in busy.json()["error"]
    held = api.post("/api/scribe/approve", {"session_id": session_id})
    assert held.status_code == 409 and "still replying" in held.json()["error"]
    lines.close()  # the reader went away: the session is free again
    assert kinds(api.say(session_id, "second")) == ["text", "done"]
    user = [m["content"] for m in ScribeSession.objects.get().messages if m["role"] == "user"]
    assert user == ["first", "second"]


def test_an_empty_message_is_refused_and_recorded_nowhere(api, script) -> None:
    script([step(text="hi")])
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    blank = api.post("/api/scribe/message", {"session_id": session_id, "text": "   "})
    assert blank.status_code == 400 and "text" in blank.json()
    assert ScribeSession.objects.get().messages == []


def test_a_gateway_that_does_not_answer_is_said_plainly(api, script, settings) -> None:
    import socket

    script([step(text="hi")])
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    settings.BEARPIT_SCRIBE_GATEWAY = f"http://127.0.0.1:{port}/v1"
    lines = api.say(session_id, "hello")
    assert kinds(lines) == ["error", "done"]
    assert lines[0]["name"] == "model"
    assert lines[0]["text"].startswith(f"the model endpoint http://127.0.0.1:{port}/v1 did not")
    session = ScribeSession.objects.get()
    assert session.replying_since is None and session.state == "open"
