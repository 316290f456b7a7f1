from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from chronicle.live import realm_group
from realms.herald.mirror import mirror_events
from realms.herald.models import BusRealm, BusRoom, BusUser

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(30)]


def _event(event_id: str, body: str) -> dict[str, object]:
    return {
        "type": "m.room.message",
        "event_id": event_id,
        "room_id": "!commons:x",
        "sender": "@bp_r1-ann:x",
        "origin_server_ts": 1234,
        "content": {"msgtype": "m.text", "body": body},
    }


def test_each_new_message_is_pushed_once_after_commit():
    # The bus directory rows provisioning would write, by hand: the mirror reads only
    # them, and provisioning for real needs a homeserver this test does not start.
    bus = BusRealm.objects.create(
        realm_id="r1", system_user_id="@system:x", operator_user_id="@o:x"
    )
    BusRoom.objects.create(bus=bus, room_id="!commons:x", kind="commons")
    BusUser.objects.create(bus=bus, agent_id="ann", user_id="@bp_r1-ann:x")
    layer = get_channel_layer()

    async def listen_and_mirror() -> list[dict[str, Any]]:
        channel = await layer.new_channel()
        await layer.group_add(realm_group("r1"), channel)
        await sync_to_async(mirror_events)([_event("$1", "hi"), _event("$2", "there")])
        await sync_to_async(mirror_events)([_event("$1", "hi")])  # a repeat: no push
        received = [await layer.receive(channel), await layer.receive(channel)]
        with pytest.raises(asyncio.TimeoutError):  # nothing for the repeat
            await asyncio.wait_for(layer.receive(channel), 0.3)
        return received

    received = async_to_sync(listen_and_mirror)()
    assert [m["type"] for m in received] == ["realm.message", "realm.message"]
    data = received[0]["data"]
    assert data["body"] == "hi"
    assert data["sender_agent"] == "ann"
    assert data["channel"] == "!commons:x"
    assert data["event_id"] == "$1"
    assert data["ts"] == 1234
