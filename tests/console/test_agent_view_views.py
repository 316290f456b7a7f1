"""The agent's-view page through Django's test client, on a real agent loop's trace
(the runtime against the scripted provider, ingested as the Warden does): the request of
the call picked (system prompt, tools offered, history as sent) and the reply, beside
the transcript up to then; bad moments refused, unknown realms and agents 404."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from django.test import Client

from chronicle.models import Event
from chronicle.traces import ingest_trace
from tests.fixtures.realms import build_realm
from tests.realms.api.test_agent_view import REALM, SYSTEM, run_agent
from tests.runtime.conftest import VIRTUAL_KEY

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

URL = f"/realms/{REALM}/agents/pong/view"


@pytest.fixture
def calls(tmp_path: Path, settings) -> list[Event]:
    settings.BEARPIT_HOME = tmp_path / "home"
    build_realm(REALM, agents=[{"id": "pong"}, {"id": "ping"}])
    _, trace = run_agent(tmp_path)
    assert ingest_trace(REALM, "pong", trace) > 0
    return list(
        Event.objects.filter(realm_id=REALM, kind="trace", payload__type="model_request").order_by(
            "id"
        )
    )


def text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_latest_call_and_a_picked_one(operator, calls):
    first, second = calls
    latest = text(operator.get(URL))
    assert SYSTEM in latest and "all done" in latest
    for tool in ("echo", "big", "boom", "slow"):
        assert f"<code>{tool}</code>" in latest
    assert f"Trace event #{second.pk}" in latest
    assert 'id="call-slider"' in latest and f'data-events="{first.pk},{second.pk}"' in latest
    assert f'href="?at={first.pk}" rel="prev"' in latest

    picked = text(operator.get(URL, {"at": str(first.pk)}))
    assert f"Trace event #{first.pk}" in picked and SYSTEM in picked
    assert "History as sent (1 message)" in picked
    assert "go; the key [REDACTED] is not yours" in picked
    assert "→ <code>echo</code>" in picked and '{"text": "hi"}' in picked
    assert "finish tool_calls" in picked
    assert VIRTUAL_KEY not in picked + latest
    # By time as well as by event.
    assert f"Trace event #{first.pk}" in text(operator.get(URL, {"at": str(first.ts_ms)}))


def test_bad_moments_unknown_agents_and_realms(operator, calls):
    bad = operator.get(URL, {"at": "yesterday"})
    assert bad.status_code == 400 and "expected an ISO time" in text(bad)
    assert operator.get(URL, {"at": "#99999999"}).status_code == 400
    before = text(operator.get(URL, {"at": str(calls[0].ts_ms - 60_000)}))
    assert "made no model call at or before" in before
    quiet = text(operator.get(f"/realms/{REALM}/agents/ping/view"))
    assert "ping has made no model call yet" in quiet
    nobody = operator.get(f"/realms/{REALM}/agents/nobody/view")
    assert nobody.status_code == 404 and "pong" in text(nobody)
    assert operator.get("/realms/none-abc123/agents/pong/view").status_code == 404
    assert Client().get(URL).status_code == 403


def test_the_realm_page_and_the_history_link_each_agent_to_its_view(operator, calls):
    for url in (f"/realms/{REALM}/", f"/history/{REALM}/report"):
        page = text(operator.get(url))
        assert f'href="/realms/{REALM}/agents/pong/view"' in page, url
        assert f'href="/realms/{REALM}/agents/ping/view"' in page, url
