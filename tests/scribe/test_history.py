"""The history kept per scenario: shown, carried into the next session, summarised, cleared."""

from __future__ import annotations

import pytest

from scribe.models import HistoryEntry, ScribeSession
from tests.scribe.conftest import call, step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def _converse(api, script, text: str) -> str:
    script([step(call("ask_user", question=f"About {text!r}: how many rounds?"))])
    created = api.post("/api/scribe/session", {"mode": "edit", "scenario": "toolcheck"})
    session_id: str = created.json()["session_id"]
    api.say(session_id, text)
    return session_id


def test_history_is_summarised_carried_over_and_cleared(api, script) -> None:
    first = _converse(api, script, "Add a third runner.")
    second = _converse(api, script, "Make the umpire stricter.")
    listed = api.get("/api/scribe/history/toolcheck").json()["history"]
    assert [(h["kind"], h["session_id"]) for h in listed] == [
        ("user", first),
        ("question", first),
        ("user", second),
        ("question", second),
    ]
    # A later session's model is told what earlier sessions asked.
    session = ScribeSession.objects.get(session_id=second)
    from scribe.services.prompt import system_prompt

    assert "Add a third runner." in system_prompt(session)
    assert "Make the umpire stricter." not in system_prompt(session)

    summarized = api.post("/api/scribe/history/toolcheck/summarize")
    assert summarized.status_code == 200
    body = summarized.json()
    assert [h["kind"] for h in body["history"]] == ["summary"]
    assert body["summary"] == "user: Add a third runner.\nuser: Make the umpire stricter."
    assert HistoryEntry.objects.filter(scenario="toolcheck").count() == 1

    cleared = api.delete("/api/scribe/history/toolcheck")
    assert cleared.json() == {"scenario": "toolcheck", "deleted": 1}
    assert api.get("/api/scribe/history/toolcheck").json()["history"] == []
    assert "Earlier conversations" not in system_prompt(session)
    # Clearing the history leaves the sessions and their drafts alone.
    assert api.get(f"/api/scribe/session/{first}").json()["version"] == 1
