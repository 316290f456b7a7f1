"""Bus messages the homeserver already accepted are kept safely, whatever they hold.

They cannot be refused after the fact, so a bad timestamp or a character no database
keeps must neither fail the transaction (the homeserver would retry it forever) nor
be lost: it is stored escaped, and a SYSTEM event records that it was.
"""

from __future__ import annotations

import json

import httpx
import pytest

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from chronicle.transcript import transcript_page
from realms.herald.config import load_registration

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def push(platform_server, txn: str, events: list[dict[str, object]] | str) -> httpx.Response:
    headers = {
        "Authorization": f"Bearer {load_registration().hs_token}",
        "Content-Type": "application/json",
    }
    body = events if isinstance(events, str) else json.dumps({"events": events})
    return httpx.put(
        f"{platform_server.url}/_matrix/app/v1/transactions/{txn}", content=body, headers=headers
    )


def message(small_bus, event_id: str, body: object, ts: object = 1_700_000_000_000):
    return {
        "type": "m.room.message",
        "event_id": event_id,
        "room_id": small_bus.commons_room_id,
        "sender": small_bus.users["alice"],
        "origin_server_ts": ts,
        "content": {"msgtype": "m.text", "body": body},
    }


@pytest.mark.parametrize("ts", [10**30, -(10**30), -5, 2**63, True])
def test_an_impossible_origin_server_ts_is_replaced_not_a_500(platform_server, small_bus, ts):
    response = push(platform_server, "ts-1", [message(small_bus, "$big-ts", "tick", ts)])
    assert response.status_code == 200, response.text
    row = Message.objects.get(matrix_event_id="$big-ts")
    assert row.body == "tick"
    assert 1_600_000_000_000 < row.ts_ms < 10**13
    assert transcript_page(small_bus.realm_id, limit=10)["messages"]


def test_nul_and_lone_surrogates_are_escaped_and_recorded(platform_server, small_bus):
    # JSON text, so the lone surrogate reaches the endpoint exactly as a client could send it.
    raw = json.dumps({"events": [message(small_bus, "$bad-chars", "PLACEHOLDER")]}).replace(
        "PLACEHOLDER", "a\\u0000b\\ud800c"
    )
    response = push(platform_server, "chars-1", raw)
    assert response.status_code == 200, response.text
    row = Message.objects.get(matrix_event_id="$bad-chars")
    assert row.body == "a\\u0000b\\ud800c"
    note = Event.objects.get(realm_id=small_bus.realm_id, kind=Kind.SYSTEM)
    assert note.payload["event"] == "message_escaped"
    assert note.payload["matrix_event_id"] == "$bad-chars"
    assert note.payload["fields"] == ["body"]
    page = transcript_page(small_bus.realm_id, limit=10)
    assert [m["body"] for m in page["messages"]] == ["a\\u0000b\\ud800c"]
    # A repeated delivery neither adds the message nor the note again.
    assert push(platform_server, "chars-2", raw).status_code == 200
    assert Message.objects.filter(matrix_event_id="$bad-chars").count() == 1
    assert Event.objects.filter(realm_id=small_bus.realm_id, kind=Kind.SYSTEM).count() == 1


def test_a_transaction_nested_too_deep_is_a_json_400(platform_server):
    response = push(platform_server, "deep-1", '{"events": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert response.status_code == 400
    assert response.json()["errcode"] == "M_BAD_JSON"


def test_a_transaction_as_large_as_a_homeserver_sends_is_mirrored(platform_server, small_bus):
    # A homeserver batches up to 100 events of up to 64 KiB each into one transaction.
    events = [message(small_bus, f"$large-{i}", f"{i}:" + "x" * 60_000) for i in range(100)]
    response = push(platform_server, "large-1", events)
    assert response.status_code == 200, response.text[:300]
    assert Message.objects.filter(realm_id=small_bus.realm_id).count() == 100
