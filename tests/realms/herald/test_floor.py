from __future__ import annotations

import pytest

from realms.herald.bus import BusAgent, grant_floor, open_floor, provision_bus
from realms.herald.matrix import matrix_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _levels(room_id):
    with matrix_client() as client:
        return client.get_state(room_id, "m.room.power_levels")


def test_floor_is_enforced_by_the_homeserver(homeserver, realm_id, agent_client):
    bus = provision_bus(
        realm_id,
        [BusAgent("p1"), BusAgent("p2"), BusAgent("ref", role="referee")],
        turns=True,
        allow_side_channels=False,
    )
    room = bus.commons_room_id
    p1, p2, ref = (agent_client(realm_id, a) for a in ("p1", "p2", "ref"))

    # Muted at creation: every agent is refused.
    muted = p1.send(room, "may I?")
    assert muted.status_code == 403
    assert muted.json()["errcode"] == "M_FORBIDDEN"
    assert _levels(room)["events_default"] == 50

    grant_floor(realm_id, "p1", referee_id="ref")
    assert p1.send(room, "my turn").status_code == 200
    assert ref.send(room, "noted").status_code == 200
    assert p2.send(room, "interrupting").status_code == 403
    levels = _levels(room)
    assert levels["users"][bus.users["p1"]] == 50
    assert levels["users"][bus.users["p2"]] == 0

    grant_floor(realm_id, "p2")
    assert p1.send(room, "again").status_code == 403
    assert ref.send(room, "referee without the floor").status_code == 403
    assert p2.send(room, "now me").status_code == 200

    open_floor(realm_id)
    assert p1.send(room, "free for all").status_code == 200
    assert p2.send(room, "indeed").status_code == 200


def test_agents_cannot_change_power_levels_or_the_room(homeserver, realm_id, agent_client):
    bus = provision_bus(realm_id, [BusAgent("p1")], turns=False, allow_side_channels=False)
    p1 = agent_client(realm_id, "p1")
    assert p1.send(bus.commons_room_id, "hello").status_code == 200
    from urllib.parse import quote

    path = f"/_matrix/client/v3/rooms/{quote(bus.commons_room_id, safe='')}/state/m.room.name/"
    response = p1._http.put(path, json={"name": "mine now"})
    assert response.status_code == 403


def test_granting_an_unknown_agent_is_refused_clearly(homeserver, small_bus):
    from realms.herald.bus import BusNotFound

    with pytest.raises(BusNotFound, match="no agent 'zed'"):
        grant_floor(small_bus.realm_id, "zed")
