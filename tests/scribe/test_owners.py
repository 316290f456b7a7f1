"""A console user's Scribe session is theirs over the API too; the bare token sees all."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from scribe.models import ScribeSession
from scribe.services import sessions
from tests.scribe.conftest import TOKEN, step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _browser(name: str) -> Client:
    browser = Client()
    browser.force_login(get_user_model().objects.create_superuser(name, "", None))
    return browser


def test_another_users_session_is_refused_over_the_api_and_left_alone(scribe_env, script) -> None:
    script([step(text="hello")])
    owner = get_user_model().objects.create_superuser("owner", "", None)
    theirs = sessions.create_session("create", "theirs", owner=owner)
    sid = theirs.session_id
    intruder = _browser("intruder")

    detail = intruder.get(f"/api/scribe/session/{sid}")
    assert detail.status_code == 403, detail.content
    assert "opened by another user" in detail.json()["error"]
    said = intruder.post(
        "/api/scribe/message", {"session_id": sid, "text": "take over"}, "application/json"
    )
    assert said.status_code == 403, said.content
    approved = intruder.post("/api/scribe/approve", {"session_id": sid}, "application/json")
    assert approved.status_code == 403, approved.content
    theirs.refresh_from_db()
    assert theirs.messages == [] and theirs.transcript == []
    assert theirs.state != ScribeSession.State.APPROVED

    # The owner's own browser, and the operator token, still reach it.
    mine = Client()
    mine.force_login(owner)
    assert mine.get(f"/api/scribe/session/{sid}").status_code == 200
    token = Client(headers={"Authorization": f"Bearer {TOKEN}"})
    assert token.get(f"/api/scribe/session/{sid}").status_code == 200


def test_a_session_opened_with_the_token_is_open_to_every_console_user(scribe_env, script) -> None:
    script([step(text="hello")])
    shared = sessions.create_session("create", "shared", owner=None)
    assert _browser("anyone").get(f"/api/scribe/session/{shared.session_id}").status_code == 200
