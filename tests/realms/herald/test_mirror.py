from __future__ import annotations

import httpx
import pytest

from chronicle.models import Message
from realms.herald.bus import (
    BusAgent,
    announce,
    operator_message,
    post_as_agent,
    provision_bus,
    system_notice,
)
from realms.herald.config import load_registration
from realms.herald.matrix import MatrixError

from .conftest import bodies, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_every_message_is_mirrored_exactly_once(platform_server, small_bus, agent_client):
    realm = small_bus.realm_id
    alice, bob = agent_client(realm, "alice"), agent_client(realm, "bob")
    sent = []
    for i in range(10):
        for name, client in (("alice", alice), ("bob", bob)):
            text = f"{name} says {i}"
            assert client.send(small_bus.commons_room_id, text).status_code == 200
            sent.append(text)
    wait_for(lambda: len(bodies(realm)) >= len(sent), what="mirrored messages")
    rows = list(Message.objects.filter(realm_id=realm))
    assert sorted(r.body for r in rows) == sorted(sent)
    assert {r.sender_agent for r in rows} == {"alice", "bob"}
    first = next(r for r in rows if r.body == "alice says 0")
    assert first.sender == small_bus.users["alice"]
    assert first.channel == small_bus.commons_room_id
    assert first.matrix_event_id.startswith("$")
    assert first.ts_ms > 0


def test_a_repeated_transaction_changes_nothing(platform_server, small_bus):
    registration = load_registration()
    event = {
        "type": "m.room.message",
        "event_id": "$replayed-event",
        "room_id": small_bus.commons_room_id,
        "sender": small_bus.users["bob"],
        "origin_server_ts": 1_700_000_000_000,
        "content": {"msgtype": "m.text", "body": "once only"},
    }
    stray = {**event, "event_id": "$elsewhere", "room_id": "!not-a-realm-room:x"}
    headers = {"Authorization": f"Bearer {registration.hs_token}"}
    url = f"{platform_server.url}/_matrix/app/v1/transactions/"
    for txn in ("1", "1", "2"):
        response = httpx.put(url + txn, json={"events": [event, event, stray]}, headers=headers)
        assert response.status_code == 200
        assert response.json() == {}
    rows = list(Message.objects.filter(matrix_event_id__in=["$replayed-event", "$elsewhere"]))
    assert [(r.body, r.sender_agent, r.ts_ms) for r in rows] == [
        ("once only", "bob", 1_700_000_000_000)
    ]


def test_the_endpoint_wants_the_hs_token(platform_server):
    url = f"{platform_server.url}/_matrix/app/v1/transactions/9"
    body: dict[str, list[object]] = {"events": []}
    assert httpx.put(url, json=body).status_code == 401
    wrong = httpx.put(url, json=body, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403
    assert wrong.json()["errcode"] == "M_FORBIDDEN"
    token = {"Authorization": f"Bearer {load_registration().hs_token}"}
    bad = httpx.put(url, content=b"{not json", headers=token)
    assert bad.status_code == 400
    ping = httpx.post(f"{platform_server.url}/_matrix/app/v1/ping", json={}, headers=token)
    assert ping.status_code == 200


def test_system_operator_and_brokered_posts(platform_server, homeserver, realm_id):
    bus = provision_bus(
        realm_id,
        [
            BusAgent("ann", private_messaging={"enabled": True}),
            BusAgent("ben", private_messaging={"enabled": True}),
        ],
        turns=False,
        allow_side_channels=False,
    )
    dm = bus.dm_rooms[("ann", "ben")]
    announce(realm_id, "Welcome", mentions=["ann"])
    announce(realm_id, "Begin!", mentions=["ann", "ben"])
    announce(realm_id, "your move", mentions=["ben"])
    operator_message(realm_id, "pause please", to="ann")
    post_as_agent(realm_id, "ann", dm, "psst", mentions=["ben"])
    system_notice(realm_id, dm, "🔇 quota reached")
    wait_for(lambda: len(bodies(realm_id)) >= 7, what="seven messages")
    rows = {r.body: r for r in Message.objects.filter(realm_id=realm_id)}
    assert len(rows) == 7
    ann, ben = bus.users["ann"], bus.users["ben"]
    lock = next(b for b in rows if "🔒" in b)
    assert ann in lock and ben in lock and rows[lock].channel == dm
    assert rows[f"{ann} Welcome"].sender == bus.system_user_id
    assert rows[f"{ann} Welcome"].sender_agent == ""
    assert rows[f"{ann} {ben} Begin!"].channel == bus.commons_room_id
    assert rows[f"{ben} your move"].sender == bus.system_user_id
    operator = rows[f"{ann} [operator] pause please"]
    assert operator.sender == bus.operator_user_id and operator.sender_agent == ""
    brokered = rows[f"{ben} psst"]
    assert (brokered.sender_agent, brokered.channel) == ("ann", dm)
    assert rows["🔇 quota reached"].channel == dm


def test_mentions_are_real_matrix_mentions(homeserver, small_bus, agent_client):
    from urllib.parse import quote

    event_id = announce(small_bus.realm_id, "hello alice", mentions=["alice"])
    bob = agent_client(small_bus.realm_id, "bob")
    room = quote(small_bus.commons_room_id, safe="")
    event = bob.get(f"/_matrix/client/v3/rooms/{room}/event/{quote(event_id, safe='')}").json()
    content = event["content"]
    assert content["m.mentions"] == {"user_ids": [small_bus.users["alice"]]}
    assert small_bus.users["alice"] in content["body"]
    assert small_bus.users["alice"] in content["formatted_body"]


def test_a_brokered_post_where_the_agent_may_not_post_is_refused(homeserver, realm_id):
    bus = provision_bus(realm_id, [BusAgent("p1")], turns=True, allow_side_channels=False)
    with pytest.raises(MatrixError) as refused:
        post_as_agent(realm_id, "p1", bus.commons_room_id, "out of turn")
    assert refused.value.status == 403
    assert not refused.value.retryable
