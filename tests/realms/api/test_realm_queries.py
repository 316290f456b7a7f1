"""The realm routes read a realm in a fixed number of queries: a realm with 10,000 events
and thousands of messages, or a list of many realms, costs what a small one does."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from realms.models import Realm
from tests.chronicle.realmkit import COMMONS, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(120), pytest.mark.django_db]

BIG = "big-abc123"
EVENTS = 10_000
MESSAGES = 3_000
ROUTES = (
    "/api/realms",
    f"/api/realms/{BIG}",
    f"/api/realms/{BIG}/transcript",
    f"/api/realms/{BIG}/events",
    f"/api/realms/{BIG}/events?kind=spend&limit=50",
    "/api/runs",
)


def _grow(realm_id: str, events: int, messages: int) -> None:
    """Events of the kinds the status reads (spend, scores, violations, verdicts) and
    messages in the Commons, inserted in bulk."""
    kinds = [
        (Kind.SPEND, lambda i: {"agent": "alice", "usd": 0.001, "tokens_in": 3, "tokens_out": 1}),
        (Kind.SCORE, lambda i: {"agent": "bob", "delta": 1, "reason": "r"}),
        (Kind.VIOLATION, lambda i: {"agent": "bob", "reason": f"v{i}"}),
        (Kind.SYSTEM, lambda i: {"event": "nudge", "n": i}),
        (Kind.LIFECYCLE, lambda i: {"event": "budget_exhausted", "agent": "bob"}),
    ]
    Event.objects.bulk_create(
        [
            Event(realm_id=realm_id, kind=str(kind), payload=make(i), ts_ms=2_000 + i)
            for i in range(events)
            for kind, make in [kinds[i % len(kinds)]]
        ],
        batch_size=2_000,
    )
    Message.objects.bulk_create(
        [
            Message(
                realm_id=realm_id,
                channel=COMMONS,
                sender=f"@bp_{realm_id}-alice:bearpit.local",
                sender_agent="alice",
                body=f"message {i}",
                ts_ms=2_000 + i,
                matrix_event_id=f"${realm_id}-{i}",
            )
            for i in range(messages)
        ],
        batch_size=2_000,
    )


def _counts(api) -> dict[str, int]:
    out = {}
    for path in ROUTES:
        with CaptureQueriesContext(connection) as queries:
            response = api.get(path)
        assert response.status_code == 200, (path, response.content)
        out[path] = len(queries)
    return out


def _realm(realm_id: str) -> None:
    build_realm(realm_id, agents=[{"id": "alice"}, {"id": "bob"}], state=Realm.State.RUNNING)
    running(realm_id, ts=1_000, config={"provider": "offline"})
    say(realm_id, "hello", 1_100, agent="alice")


def test_query_counts_do_not_grow_with_events_messages_or_realms(routes_api):
    _realm(BIG)
    small = _counts(routes_api)

    _grow(BIG, EVENTS, MESSAGES)
    for n in range(12):
        _realm(f"other-{n:02d}-abc123")
        _grow(f"other-{n:02d}-abc123", 40, 5)
    large = _counts(routes_api)

    assert large == small
    assert max(large.values()) <= 25, large
    status = routes_api.get(f"/api/realms/{BIG}").json()
    assert status["events"] > EVENTS and status["messages"] == MESSAGES + 1
    assert len(routes_api.get("/api/runs").json()["runs"]) == 13
    assert len(routes_api.get("/api/realms").json()["realms"]) == 13
