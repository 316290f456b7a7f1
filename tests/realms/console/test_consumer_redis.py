"""The realm websocket on the production channel layer (channels-redis on the test
Redis): a bus message mirrored in one place reaches the page, and a reconnect replays."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.herald.mirror import mirror_events
from tests.fixtures.worker import redis_url
from tests.realms.console.test_consumer import (
    REALM,
    _bus,
    _bus_message,
    _communicator,
    _drain,
    _session_cookie,
    _until_ready,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def redis_layer(settings: Any) -> Any:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url(1)]},
        }
    }
    layer = get_channel_layer()
    assert type(layer).__name__ == "RedisChannelLayer"
    return layer


def _empty_layer() -> None:
    # A raw FLUSHDB rather than the layer's flush(), which closes every event loop's
    # connections from the calling loop and so fails on the pushes' own loop.
    redis.Redis.from_url(redis_url(1)).flushdb()


async def test_pushes_cross_redis_to_the_page_and_a_reconnect_replays(redis_layer: Any) -> None:
    await sync_to_async(_empty_layer)()
    await sync_to_async(_bus)()
    cookie = await sync_to_async(_session_cookie)(superuser=True)
    ws = _communicator(f"/ws/realms/{REALM}/", cookie=cookie)
    connected, _ = await ws.connect()
    assert connected
    first = await _until_ready(ws)
    await sync_to_async(mirror_events)([_bus_message("$r1", "over redis", 5_000)])
    got = await ws.receive_json_from(timeout=5)
    assert got["kind"] == "message" and got["body"] == "over redis"
    await ws.disconnect()

    score = await sync_to_async(record_event)(REALM, Kind.SCORE, {"agent": "ann", "delta": 1})
    last = max(p["id"] for p in first if "id" in p)
    ws = _communicator(f"/ws/realms/{REALM}/?after_event={last}&after_ts=5000", cookie=cookie)
    await ws.connect()
    replayed = await _until_ready(ws)
    assert score.pk in {p.get("id") for p in replayed}
    assert "$r1" in {p.get("event_id") for p in replayed}  # within the replay's reach-back
    assert await _drain(ws) == []
    await ws.disconnect()
    await sync_to_async(_empty_layer)()
