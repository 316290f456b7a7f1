"""Loss-free mirroring across crashes: whatever reached the bus lands in the
Chronicle exactly once."""

from __future__ import annotations

import threading
import time
from collections import Counter

import httpx
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


def _assert_exactly_once(realm_id, sent, attempted=None):
    """Every acknowledged message is chronicled exactly once; with ``attempted``, a send
    cut off by a crash may be chronicled too (the homeserver may have kept it), but once."""

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
    assert set(sent) <= set(counts) <= set(attempted if attempted is not None else sent)


class _Stream:
    """One agent sending without pause in a thread, so a crash lands between sends
    and inside them; ``acked`` are the sends the homeserver answered 200."""

    def __init__(self, client, room_id, prefix):
        self.attempted: list[str] = []
        self.acked: list[str] = []
        self._client, self._room, self._prefix = client, room_id, prefix
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        for n in range(3000):
            if self._stop.is_set():
                return
            text = f"{self._prefix} {n}"
            self.attempted.append(text)
            try:
                response = self._client.send(self._room, text)
            except httpx.HTTPError:
                time.sleep(0.05)  # the homeserver is down: try the next one shortly
                continue
            if response.status_code == 200:
                self.acked.append(text)

    def wait(self, count, what):
        wait_for(lambda: len(self.acked) >= count, timeout=90, what=what)

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=60)


def test_homeserver_killed_mid_stream_loses_and_duplicates_nothing(
    platform_server, homeserver, small_bus, agent_client
):
    realm = small_bus.realm_id
    alice = agent_client(realm, "alice")
    stream = _Stream(alice, small_bus.commons_room_id, "stream")
    try:
        # Kill only once sends are going out and being mirrored, and while one is in flight.
        stream.wait(10, "10 acknowledged sends")
        wait_for(
            lambda: Message.objects.filter(realm_id=realm).count() >= 5,
            what="the stream being mirrored",
        )
        homeserver.kill()
        at_kill = len(stream.acked)
        homeserver.restart()
        stream.wait(at_kill + 10, "sends acknowledged after the restart")
    finally:
        stream.stop()
    assert resume_delivery()
    _assert_exactly_once(realm, stream.acked, stream.attempted)


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
