"""The operator message and the stall nudge on a real homeserver, mirrored back."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest

from chronicle.kinds import Kind
from chronicle.models import Message
from realms.herald.bus import BusAgent, announce, provision_bus
from realms.models import Realm
from realms.warden import nudges
from realms.warden.snapshot import build_snapshot
from tests.chronicle.realmkit import event
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

TOKEN = "bus-test-operator-token"


@pytest.fixture(autouse=True)
def _token(settings):
    settings.BEARPIT_API_TOKEN = TOKEN


def wait_for(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the mirrored message")


def test_operator_message_and_nudge_reach_the_commons(platform_server, realm_id, client):
    build_realm(realm_id, agents=[{"id": "alice"}, {"id": "bob"}], state=Realm.State.RUNNING)
    bus = provision_bus(
        realm_id, [BusAgent("alice"), BusAgent("bob")], turns=False, allow_side_channels=False
    )
    event(
        realm_id,
        Kind.LIFECYCLE,
        {"event": "running", "commons_room": bus.commons_room_id, "side_channels": {}},
        1_000,
    )

    response = client.post(
        f"/api/realms/{realm_id}/msg",
        data=json.dumps({"text": "wrap up in five minutes", "to": "bob"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )
    assert response.status_code == 200, response.content
    assert response.json()["delivered"] is True

    snapshot = build_snapshot(realm_id, now_ms=1_000 + 200_000)
    nudge = nudges.nudge_if_stalled(
        snapshot, post=lambda text, mentions: announce(realm_id, text, mentions)
    )
    assert nudge is not None and nudge.mentions == ("alice", "bob")

    def mirrored() -> list[Message]:
        return list(Message.objects.filter(realm_id=realm_id, channel=bus.commons_room_id))

    wait_for(lambda: len(mirrored()) >= 2)
    by_body = {m.body: m for m in mirrored()}
    operator = by_body[f"{bus.users['bob']} [operator] wrap up in five minutes"]
    assert operator.sender == bus.operator_user_id and operator.sender_agent == ""
    nudged = next(m for m in mirrored() if nudges.REALM_TEXT in m.body)
    assert bus.users["alice"] in nudged.body and bus.users["bob"] in nudged.body
    assert nudged.sender == bus.system_user_id
    # system posts are not progress: the nudge does not count as agent activity
    assert build_snapshot(realm_id, now_ms=1_000 + 200_000).messages == ()
