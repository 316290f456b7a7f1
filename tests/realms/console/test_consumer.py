"""The realm page's websocket through the whole ASGI stack (origin check, session, route):
who may connect, the typed payloads, and a reconnect that fills the gap exactly once."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth import get_user_model
from django.test import Client

from bearpit.asgi import application
from chronicle.kinds import Kind, Lifecycle
from chronicle.live import realm_group
from chronicle.models import Event
from chronicle.services import record_event
from realms.console.consumers import BAD_QUERY, NOT_OPERATOR, UNKNOWN_REALM
from realms.herald.mirror import mirror_events
from realms.herald.models import BusRealm, BusRoom, BusUser

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = b"http://127.0.0.1:8000"
REALM = "live-r1"


def _session_cookie(*, superuser: bool) -> bytes:
    user_model = get_user_model()
    user = user_model.objects.create_user(
        username="op" if superuser else "someone", is_superuser=superuser, is_staff=superuser
    )
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()


def _bus() -> None:
    # The bus rows provisioning writes, by hand: the mirror reads only them.
    bus = BusRealm.objects.create(
        realm_id=REALM, system_user_id="@system:x", operator_user_id="@o:x"
    )
    BusRoom.objects.create(bus=bus, room_id="!commons:x", kind="commons")
    BusUser.objects.create(bus=bus, agent_id="ann", user_id="@bp-ann:x")
    record_event(REALM, Kind.LIFECYCLE, {"event": Lifecycle.RUNNING, "commons_room": "!commons:x"})


def _bus_message(event_id: str, body: str, ts: int) -> dict[str, Any]:
    return {
        "type": "m.room.message",
        "event_id": event_id,
        "room_id": "!commons:x",
        "sender": "@bp-ann:x",
        "origin_server_ts": ts,
        "content": {"msgtype": "m.text", "body": body},
    }


def _communicator(
    path: str, *, cookie: bytes | None, origin: bytes = ORIGIN
) -> WebsocketCommunicator:
    headers = [(b"origin", origin), (b"host", b"127.0.0.1:8000")]
    if cookie is not None:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, path, headers=headers)


async def _until_ready(ws: WebsocketCommunicator) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    while True:
        payload = await ws.receive_json_from(timeout=5)
        if payload["kind"] == "ready":
            return got
        got.append(payload)


async def _drain(ws: WebsocketCommunicator, quiet_s: float = 0.4) -> list[dict[str, Any]]:
    # receive_nothing, not a timed-out receive: that would cancel the consumer.
    got: list[dict[str, Any]] = []
    while not await ws.receive_nothing(timeout=quiet_s):
        got.append(await ws.receive_json_from())
    return got


async def test_an_anonymous_browser_is_refused() -> None:
    await sync_to_async(_bus)()
    ws = _communicator(f"/ws/realms/{REALM}/", cookie=None)
    connected, code = await ws.connect()
    assert not connected
    assert code == NOT_OPERATOR


async def test_a_signed_in_user_who_is_not_the_operator_is_refused() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=False)
    connected, code = await _communicator(f"/ws/realms/{REALM}/", cookie=cookie).connect()
    assert not connected
    assert code == NOT_OPERATOR


async def test_a_page_of_another_origin_is_refused_even_with_the_session() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    ws = _communicator(f"/ws/realms/{REALM}/", cookie=cookie, origin=b"http://evil.example")
    connected, _ = await ws.connect()
    assert not connected
    same = _communicator(f"/ws/realms/{REALM}/", cookie=cookie)
    connected, _ = await same.connect()
    assert connected
    await same.disconnect()


async def test_a_bad_query_or_an_unknown_realm_is_named_and_closes() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    ws = _communicator(f"/ws/realms/{REALM}/?after_event=-3", cookie=cookie)
    connected, _ = await ws.connect()
    assert connected
    said = await ws.receive_json_from()
    assert said["kind"] == "error" and said["error"].startswith("after_event:")
    assert (await ws.receive_output())["code"] == BAD_QUERY
    ws = _communicator("/ws/realms/nope/", cookie=cookie)
    await ws.connect()
    said = await ws.receive_json_from()
    assert said == {"v": 1, "kind": "error", "error": "realm_id: no realm 'nope'"}
    assert (await ws.receive_output())["code"] == UNKNOWN_REALM


async def test_each_kind_arrives_typed_and_redacted() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    last = await sync_to_async(lambda: Event.objects.latest("id").pk)()
    ws = _communicator(f"/ws/realms/{REALM}/?after_event={last}&after_ts=0", cookie=cookie)
    connected, _ = await ws.connect()
    assert connected
    await _until_ready(ws)

    await sync_to_async(mirror_events)([_bus_message("$m1", "hello <b>all</b>", 1_000)])
    message = await ws.receive_json_from(timeout=5)
    assert message == {
        "v": 1,
        "kind": "message",
        "event_id": "$m1",
        "channel": "!commons:x",
        "sender": "@bp-ann:x",
        "agent": "ann",
        "who": "ann",
        "body": "hello <b>all</b>",
        "attachments": [],
        "ts": 1_000,
    }

    spend = {"agent": "ann", "usd": 0.25, "cumulative": 0.5, "cap": 1.0}
    await sync_to_async(record_event)(REALM, Kind.SPEND, {**spend, "tokens_in": 7, "tokens_out": 3})
    got = await ws.receive_json_from(timeout=5)
    assert got["kind"] == "spend" and got["v"] == 1
    assert {
        k: got[k] for k in ("agent", "usd", "cumulative", "cap", "tokens_in", "tokens_out")
    } == {
        **spend,
        "tokens_in": 7,
        "tokens_out": 3,
    }

    await sync_to_async(record_event)(
        REALM, Kind.TOOL_CALL, {"agent": "ann", "tool": "run_code", "api_key": "sk-secret"}
    )
    got = await ws.receive_json_from(timeout=5)
    assert got["kind"] == "event" and got["event_kind"] == "tool_call"
    assert got["payload"] == {"agent": "ann", "tool": "run_code", "api_key": "[redacted]"}
    assert "sk-secret" not in str(got)

    # A model-call trace is pit_trace's, not the page's: the next thing sent is the note.
    await sync_to_async(record_event)(REALM, Kind.TRACE, {"agent": "ann", "calls": [1, 2]})
    await sync_to_async(record_event)(REALM, Kind.NOTE, {"text": "after the trace"})
    got = await ws.receive_json_from(timeout=5)
    assert got["event_kind"] == "note", got

    await sync_to_async(record_event)(REALM, Kind.LIFECYCLE, {"event": Lifecycle.CONCLUDING})
    timeline, state = await ws.receive_json_from(timeout=5), await ws.receive_json_from(timeout=5)
    assert timeline["kind"] == "event" and timeline["event_kind"] == "lifecycle"
    assert state == {
        "v": 1,
        "kind": "state",
        "id": timeline["id"],
        "state": "concluding",
        "ts": state["ts"],
    }
    await ws.disconnect()


async def test_a_reconnect_gets_what_it_missed_once_and_then_live_ones() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    ws = _communicator(f"/ws/realms/{REALM}/", cookie=cookie)
    await ws.connect()
    first = await _until_ready(ws)
    assert [p["kind"] for p in first] == ["event", "state"]  # the running event
    await sync_to_async(mirror_events)([_bus_message("$a", "one", 10_000)])
    await sync_to_async(record_event)(REALM, Kind.SCORE, {"agent": "ann", "delta": 1})
    seen = await _drain(ws)
    assert [p["kind"] for p in seen] == ["message", "event"]
    await ws.disconnect()

    # While the page is away: a message and a score.
    await sync_to_async(mirror_events)([_bus_message("$b", "two", 10_500)])
    await sync_to_async(record_event)(REALM, Kind.SCORE, {"agent": "ann", "delta": 2})

    last_event = max(p["id"] for p in [*first, *seen] if "id" in p)
    last_ts = max(p["ts"] for p in seen if p["kind"] == "message")
    ws = _communicator(
        f"/ws/realms/{REALM}/?after_event={last_event}&after_ts={last_ts}", cookie=cookie
    )
    await ws.connect()
    replayed = await _until_ready(ws)
    await sync_to_async(record_event)(REALM, Kind.SCORE, {"agent": "ann", "delta": 3})
    live = await _drain(ws)
    await ws.disconnect()

    # The client dedupes what it saw (the replay reaches back a little); what it had not
    # seen arrives exactly once, then the live score.
    known = {(p["kind"], p.get("event_id") or p.get("id")) for p in [*first, *seen]}
    new = [
        p for p in [*replayed, *live] if (p["kind"], p.get("event_id") or p.get("id")) not in known
    ]
    assert [(p["kind"], p.get("body") or p.get("payload", {}).get("delta")) for p in new] == [
        ("message", "two"),
        ("event", 2),
        ("event", 3),
    ]
    keys = [(p["kind"], p.get("event_id") or p.get("id")) for p in [*replayed, *live]]
    assert len(keys) == len(set(keys)), "sent twice on one connection"


async def test_a_push_of_a_row_the_replay_already_sent_is_not_sent_again() -> None:
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    note = await sync_to_async(record_event)(REALM, Kind.NOTE, {"n": 1})
    ws = _communicator(f"/ws/realms/{REALM}/", cookie=cookie)
    await ws.connect()
    replayed = await _until_ready(ws)
    assert note.pk in {p.get("id") for p in replayed}
    # A row committed after the consumer joined the group and before it read the replay is
    # in both: its push, arriving now, is the one to drop. Sent as record_event sends it.
    layer = get_channel_layer()
    data = {"id": note.pk, "kind": note.kind, "payload": note.payload, "ts": note.ts_ms}
    await layer.group_send(realm_group(REALM), {"type": "realm.event", "data": data})
    fresh = await sync_to_async(record_event)(REALM, Kind.NOTE, {"n": 2})
    live = await _drain(ws)
    await ws.disconnect()
    assert [p["id"] for p in live] == [fresh.pk]
