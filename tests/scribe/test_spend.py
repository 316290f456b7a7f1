"""Scribe's calls are metered on its own capped key; the cap stops it and the draft stays."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chronicle.models import Event
from ledger.models import NANO, Spend, VirtualKey
from ledger.services.profiles import get_profile
from scribe.models import ScribeSession
from scribe.services.model import MAX_TOKENS
from scribe.services.sessions import KEY_REALM
from tests.scribe.conftest import call, step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(90)]


def test_spend_is_metered_on_scribes_own_key(api, script) -> None:
    script([step(call("list_draft")), step(call("list_skills")), step(text="Ready.")])
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    api.say(session_id, "hello")
    session = ScribeSession.objects.get(session_id=session_id)
    assert session.key_id is not None
    key = VirtualKey.objects.get(pk=session.key_id)
    assert (key.realm_id, key.agent_id) == (KEY_REALM, session_id)
    assert key.provider == "offline" and key.model == "scripted-large"
    assert key.cap_nusd == 2 * NANO  # BEARPIT_SCRIBE_CAP_USD's default
    spends = Spend.objects.filter(key=key)
    assert spends.count() == 3 == key.calls
    assert sum(s.cost_nusd for s in spends) == key.spent_nusd > 0
    view = api.get(f"/api/scribe/session/{session_id}").json()
    assert view["spend"]["calls"] == 3
    assert view["spend"]["spent_usd"] == key.spent_nusd / NANO
    assert view["spend"]["cap_usd"] == 2.0
    # Spend on the session's key, and no realm's: no realm is charged or listed.
    assert not Spend.objects.exclude(realm_id=KEY_REALM).exists()
    assert Event.objects.filter(realm_id=KEY_REALM, kind="spend").count() == 3
    assert api.get("/api/realms").json()["realms"] == []
    # The key's secret never leaves the ledger and the session: not in the view.
    body = api.get(f"/api/scribe/session/{session_id}").content.decode()
    assert key.key_prefix not in body
    assert not Event.objects.filter(payload__icontains=key.key_prefix).exists()


def test_the_cap_stops_scribe_and_keeps_the_draft(api, script, settings) -> None:
    large = get_profile("offline").categories["large"]
    assert large.input_cost_per_token is not None and large.output_cost_per_token is not None
    # Room for the worst case of one call and a few thousand prompt tokens more: a few
    # calls pass, then the gateway refuses the next reservation.
    cap = MAX_TOKENS * large.output_cost_per_token + 8000 * large.input_cost_per_token
    settings.BEARPIT_SCRIBE_CAP_USD = float(cap)
    script(
        [
            step(
                call("write_draft_file", path="notes.md", content="draft notes\n"),
                call("read_format_reference"),
            )
        ],
        loop=True,
    )
    session_id = api.post("/api/scribe/session", {"mode": "create"}).json()["session_id"]
    lines = api.say(session_id, "Write forever.")
    errors = [line for line in lines if line["kind"] == "error"]
    assert [e["name"] for e in errors] == ["budget"]
    assert "budget cap is spent" in errors[0]["text"]
    assert "is kept" in errors[0]["text"]
    assert lines[-1] == {"kind": "done", "text": "capped", "name": ""}

    session = ScribeSession.objects.get(session_id=session_id)
    assert session.state == "capped"
    assert session.key_id is not None
    key = VirtualKey.objects.get(pk=session.key_id)
    assert key.calls >= 1
    assert key.cap_nusd is not None and key.spent_nusd <= key.cap_nusd
    assert key.refused_at is not None
    # The draft written before the cap is kept and shown.
    view = api.get(f"/api/scribe/session/{session_id}").json()
    assert view["files"] == {"notes.md": "draft notes\n"}
    assert view["spend"]["exhausted"] is True
    assert Decimal(str(view["spend"]["spent_usd"])) <= cap
    # A capped session says so, and takes no more messages.
    again = api.post("/api/scribe/message", {"session_id": session_id, "text": "more"})
    assert again.status_code == 409
    assert "spent its budget cap" in again.json()["error"]
    assert "draft is kept" in again.json()["error"]
