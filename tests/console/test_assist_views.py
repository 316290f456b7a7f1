"""Scribe's console pages through Django's test client: who may open a session, bad input
refused with nothing changed, and a scripted conversation through the console's own
routes (its streamed reply, the page rebuilt from the stored session, approval)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from ledger.models import NANO, VirtualKey
from ledger.services.profiles import get_profile
from realms.library import services as library
from realms.models import Realm, Scenario
from scribe.models import ScribeSession
from scribe.services import sessions
from scribe.services.model import MAX_TOKENS
from tests.scribe import conftest as scribe_fixtures
from tests.scribe.conftest import call, debate_files, step, writes

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]

# The gateway with the offline profile, and the scripted replies (tests/scribe/conftest.py).
scribe_env = scribe_fixtures.scribe_env
script = scribe_fixtures.script

ROUTES = ("", "draft")
POSTS = ("message", "validate", "approve", "launch")


def say(client: Any, session_id: str, text: str) -> list[dict[str, str]]:
    response = client.post(f"/assist/{session_id}/message", {"text": text})
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/x-ndjson"
    body = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in body.splitlines()]


def other_user() -> Any:
    return get_user_model().objects.create_superuser("someone-else", "", None)


def test_a_browser_without_the_operator_session_sees_nothing(client, scribe_env) -> None:
    session = sessions.create_session("create", "mine")
    for url in ("/assist/", "/assist/new", "/assist/new?scenario=toolcheck"):
        assert client.get(url).status_code == 403, url
    for route in ROUTES:
        assert client.get(f"/assist/{session.session_id}/{route}").status_code == 403, route
    for route in POSTS:
        response = client.post(f"/assist/{session.session_id}/{route}", {"text": "hi"})
        assert response.status_code == 403, route
    assert client.post("/assist/new", {"provider": "offline", "tier": "large"}).status_code == 403
    assert ScribeSession.objects.count() == 1
    assert ScribeSession.objects.get().transcript == []


def test_an_unknown_session_is_a_404(operator, scribe_env) -> None:
    for route in ROUTES:
        response = operator.get(f"/assist/0123456789abcdef/{route}")
        assert response.status_code == 404, route
        assert "no Scribe session" in response.content.decode()
    for route in POSTS:
        assert operator.post(f"/assist/0123456789abcdef/{route}").status_code == 404, route
    message = operator.post("/assist/0123456789abcdef/message", {"text": "hi"})
    assert "no such Scribe session" in message.json()["error"]


def test_another_users_session_is_refused_and_left_alone(operator, scribe_env, script) -> None:
    script([step(text="hello")])
    theirs = sessions.create_session("create", "theirs", owner=other_user())
    page = operator.get(f"/assist/{theirs.session_id}/")
    assert page.status_code == 403
    assert "opened by another user" in page.content.decode()
    assert operator.get(f"/assist/{theirs.session_id}/draft").status_code == 403
    message = operator.post(f"/assist/{theirs.session_id}/message", {"text": "take over"})
    assert message.status_code == 403
    for route in ("validate", "approve", "launch"):
        assert operator.post(f"/assist/{theirs.session_id}/{route}").status_code == 403, route
    theirs.refresh_from_db()
    assert theirs.messages == [] and theirs.transcript == []
    # The list shows the operator's own sessions (and token-opened ones), not theirs.
    me = get_user_model().objects.get(username="operator")
    mine = sessions.create_session("create", "mine", owner=me)
    by_token = sessions.create_session("create", "by-token")
    listing = operator.get("/assist/").content.decode()
    assert mine.session_id in listing and by_token.session_id in listing
    assert theirs.session_id not in listing


def test_bad_input_to_the_start_form_is_refused_beside_its_field(operator, scribe_env) -> None:
    form = operator.get("/assist/new").content.decode()
    assert 'value="offline" selected' in form  # BEARPIT_SCRIBE_PROVIDER is the default
    bad = operator.post(
        "/assist/new", {"name": "bad name", "provider": "nowhere", "tier": "huge", "cap_usd": "0"}
    )
    assert bad.status_code == 400
    page = bad.content.decode()
    assert "expected letters, digits" in page
    assert "Select a valid choice. nowhere is not one of the available choices." in page
    assert "Select a valid choice. huge" in page
    assert "Ensure this value is greater than or equal to 0.01" in page
    taken = operator.post(
        "/assist/new",
        {"name": "toolcheck", "provider": "offline", "tier": "large", "cap_usd": "1"},
    )
    assert taken.status_code == 400
    assert "already in the library; edit it instead" in taken.content.decode()
    assert operator.get("/assist/new?scenario=no-such-scenario").status_code == 404
    assert not ScribeSession.objects.exists()
    assert not VirtualKey.objects.exists()


def test_the_form_opens_a_session_on_the_chosen_tier_and_cap(operator, scribe_env) -> None:
    response = operator.post(
        "/assist/new", {"name": "", "provider": "offline", "tier": "small", "cap_usd": "0.75"}
    )
    session = ScribeSession.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/assist/{session.session_id}/"
    assert session.owner is not None and session.owner.username == "operator"
    assert (session.mode, session.provider) == ("create", "offline")
    assert session.model == "scripted-small"
    key = VirtualKey.objects.get(pk=session.key_id or 0)
    assert key.cap_nusd is not None and Decimal(key.cap_nusd) / NANO == Decimal("0.75")

    edit = operator.post(
        "/assist/new",
        {"scenario": "toolcheck", "provider": "offline", "tier": "large", "cap_usd": "2"},
    )
    opened = ScribeSession.objects.get(mode="edit")
    assert edit["Location"] == f"/assist/{opened.session_id}/"
    page = operator.get(edit["Location"]).content.decode()
    assert "Editing toolcheck with Scribe" in page
    assert "No changes: the draft is the saved package." in page


def test_refused_messages_and_approvals_change_nothing(operator, scribe_env, script) -> None:
    script([step(text="hi")])
    session = sessions.create_session("create", "quiet", owner=None)
    blank = operator.post(f"/assist/{session.session_id}/message", {"text": "   "})
    assert blank.status_code == 400 and "must not be empty" in blank.json()["error"]
    approve = operator.post(f"/assist/{session.session_id}/approve")
    assert approve.status_code == 409
    assert "nothing to approve" in approve.content.decode()
    launch = operator.post(f"/assist/{session.session_id}/launch")
    assert launch.status_code == 400
    assert "does not validate yet" in launch.content.decode()
    session.refresh_from_db()
    assert session.messages == [] and session.transcript == []
    assert not Scenario.objects.filter(name="quiet").exists()


def test_a_message_without_the_csrf_token_is_refused(scribe_env, script) -> None:
    script([step(text="hi")])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(get_user_model().objects.create_superuser("operator", "", None))
    session = sessions.create_session("create", "guarded")
    response = browser.post(f"/assist/{session.session_id}/message", {"text": "hello"})
    assert response.status_code == 403
    session.refresh_from_db()
    assert session.messages == []


def test_a_conversation_through_the_console_saves_only_on_approval(
    operator, scribe_env, script
) -> None:
    files = debate_files()
    script(
        [
            step(call("ask_user", question="Who should judge the debate?")),
            step({"name": "write_draft_file", "arguments": "{not json"}, *writes(files)),
            step(call("validate_draft")),
            step(call("propose_draft", summary="debate: alice, bob and a judge")),
            step(text="Review the manifest and each persona, then approve."),
        ]
    )
    session = sessions.create_session("create", "debate", owner=None)
    sid = session.session_id
    first = say(operator, sid, "A debate between two agents, please.")
    assert [line["kind"] for line in first] == ["tool", "question", "done"]
    second = say(operator, sid, "A judge who rules.")
    assert second[-1] == {"kind": "done", "text": "proposed", "name": ""}
    errors = [line for line in second if line["kind"] == "error"]
    assert errors[0]["text"] == "the model called write_draft_file with arguments that are not JSON"

    # A reload rebuilds the page from the stored session: every line, the draft, its diff.
    page = operator.get(f"/assist/{sid}/").content.decode()
    assert "Who should judge the debate?" in page
    assert "A judge who rules." in page
    assert "arguments that are not JSON" in page
    assert "write_draft_file agents/alice/persona.md" in page
    assert "Waiting for your approval" in page
    assert '<span class="d-add">+You argue for the motion.</span>' in page
    assert "Approve and save to the library" in page
    assert not Scenario.objects.filter(name="debate").exists()  # nothing saved yet

    checked = operator.post(f"/assist/{sid}/validate", HTTP_HX_REQUEST="true")
    assert "Checked just now: the draft is a valid package." in checked.content.decode()
    approved = operator.post(f"/assist/{sid}/approve")
    assert approved.status_code == 302 and approved["Location"] == "/scenarios/debate/"
    saved = library.resolve("debate")
    assert saved.source == Scenario.Source.USER
    assert library.load_scenario(saved).ok
    assert library.scenario_files(saved) == {p: t.encode() for p, t in files.items()}
    closed = operator.post(f"/assist/{sid}/message", {"text": "more"})
    assert closed.status_code == 409 and "approved and saved" in closed.json()["error"]


def test_a_spent_cap_is_said_plainly_and_the_draft_kept(
    operator, scribe_env, script, settings
) -> None:
    large = get_profile("offline").categories["large"]
    assert large.input_cost_per_token is not None and large.output_cost_per_token is not None
    # Room for a call or two, then the gateway refuses the next reservation.
    cap = MAX_TOKENS * large.output_cost_per_token + 8000 * large.input_cost_per_token
    settings.BEARPIT_SCRIBE_CAP_USD = float(cap)
    script([step(call("write_draft_file", path="notes.md", content="draft notes\n"))], loop=True)
    session = sessions.create_session("create", "spendy", owner=None)
    lines = say(operator, session.session_id, "Write forever.")
    assert lines[-1]["text"] == "capped"
    page = operator.get(f"/assist/{session.session_id}/").content.decode()
    assert "budget cap is spent" in page
    assert "Budget cap spent" in page
    assert "draft notes" in page  # the draft is kept, and shown
    assert 'id="composer" class="composer" hidden' in page


def test_the_draft_launches_on_the_offline_provider_without_reaching_the_library(
    operator, scribe_env, script, local_worker, settings
) -> None:
    files = debate_files()
    script([step(*writes(files)), step(text="Drafted.")])
    session = sessions.create_session("create", "debate", owner=None)
    say(operator, session.session_id, "A debate.")
    response = operator.post(f"/assist/{session.session_id}/launch", {"realm_id": "debate-try"})
    assert response.status_code == 302 and response["Location"] == "/realms/debate-try/"
    assert local_worker.get_nowait() == "debate-try"
    realm = Realm.objects.get(realm_id="debate-try")
    drafts_root = Path(settings.BEARPIT_HOME) / "scribe" / "drafts" / session.session_id
    assert Path(realm.package_path).is_relative_to(drafts_root.resolve())
    assert realm.run_config["provider"] == "offline"
    assert not Scenario.objects.filter(name="debate").exists()
    assert not (Path(settings.BEARPIT_HOME) / "scenarios" / "debate").exists()

    again = operator.post(f"/assist/{session.session_id}/launch", {"realm_id": "debate-try"})
    assert again.status_code == 409
    assert "already taken" in again.content.decode()
    assert Realm.objects.count() == 1


def test_a_page_opened_mid_reply_shows_what_was_said_so_far(operator, scribe_env, script) -> None:
    from scribe.services import conversation

    script([step(call("ask_user", question="Which realm?")), step(text="later")])
    session = sessions.create_session("create", "midway", owner=None)
    started = conversation.start_message(session.session_id, "Draft me a realm.")
    lines = conversation.reply(started)
    assert next(lines)["kind"] == "tool"  # the reply is running, held mid-way
    page = operator.get(f"/assist/{session.session_id}/").content.decode()
    assert "Draft me a realm." in page
    assert "ask_user" in page
    assert "Scribe is still replying to the last message" in page
    busy = operator.post(f"/assist/{session.session_id}/message", {"text": "again"})
    assert busy.status_code == 409 and "still replying" in busy.json()["error"]
    lines.close()
    page = operator.get(f"/assist/{session.session_id}/").content.decode()
    assert "Scribe is still replying" not in page
