"""Loss-free mirroring across crashes: whatever reached the bus lands in the
Chronicle exactly once."""

from __future__ import annotations

from collections import Counter

import pytest

from chronicle.models import Message
from realms.herald.delivery import resume_delivery

from .conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]


def _send_batch(client, room_id, prefix, count):
    sent = []
    for i in range(count):
        text = f"{prefix} {i}"
        response = client.send(room_id, text)
        if response.status_code == 200:
            sent.append(text)
    return sent


def _assert_exactly_once(realm_id, sent):
    def all_there() -> bool:
        return set(sent) <= set(
            Message.objects.filter(realm_id=realm_id).values_list("body", flat=True)
        )

    try:
        wait_for(all_there, timeout=30, what=f"{len(sent)} messages in the Chronicle")
    except AssertionError:
        have = set(Message.objects.filter(realm_id=realm_id).values_list("body", flat=True))
        raise AssertionError(f"missing {sorted(set(sent) - have)}") from None
    counts = Counter(Message.objects.filter(realm_id=realm_id).values_list("body", flat=True))
    assert {body: n for body, n in counts.items() if n != 1} == {}
    assert set(counts) == set(sent)


def test_homeserver_killed_mid_stream_loses_and_duplicates_nothing(
    platform_server, homeserver, small_bus, agent_client
):
    realm = small_bus.realm_id
    alice = agent_client(realm, "alice")
    sent = _send_batch(alice, small_bus.commons_room_id, "before", 30)
    assert len(sent) == 30
    homeserver.kill()
    homeserver.restart()
    sent += _send_batch(alice, small_bus.commons_room_id, "after", 10)
    assert len(sent) == 40
    assert resume_delivery()
    _assert_exactly_once(realm, sent)


def test_endpoint_down_mid_stream_then_back(platform_server, homeserver, small_bus, agent_client):
    realm = small_bus.realm_id
    bob = agent_client(realm, "bob")
    sent = _send_batch(bob, small_bus.commons_room_id, "up", 10)
    platform_server.stop()
    try:
        sent += _send_batch(bob, small_bus.commons_room_id, "down", 20)
    finally:
        platform_server.start()
    sent += _send_batch(bob, small_bus.commons_room_id, "back", 5)
    assert len(sent) == 35
    # The push alone must deliver the backlog here (no reading rooms back).
    assert resume_delivery(reconcile_rooms=False)
    _assert_exactly_once(realm, sent)
