from __future__ import annotations

import pytest

from realms.herald.bus import BusAgent, provision_bus, teardown_bus
from realms.herald.gatefile import side_channel_realms
from realms.herald.matrix import matrix_client
from realms.herald.models import BusRealm, BusUser

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_teardown_closes_rooms_and_deactivates_agents(homeserver, realm_id, agent_client):
    bus = provision_bus(
        realm_id,
        [BusAgent("a", private_messaging={"enabled": True}), BusAgent("b")],
        turns=False,
        allow_side_channels=True,
    )
    assert realm_id in side_channel_realms()
    a = agent_client(realm_id, "a")
    assert a.send(bus.commons_room_id, "last words").status_code == 200

    teardown_bus(realm_id)

    with matrix_client() as client:
        for room_id in (bus.commons_room_id, bus.dm_rooms[("a", "b")]):
            members = client.joined_members(room_id)
            assert not members & set(bus.users.values())
            assert bus.operator_user_id not in members
    # The agent's token is dead and stored tokens are gone.
    assert a.get("/_matrix/client/v3/account/whoami").status_code == 401
    assert not BusUser.objects.filter(bus__realm_id=realm_id).exclude(token_encrypted="").exists()
    assert BusRealm.objects.get(realm_id=realm_id).closed_at is not None
    assert realm_id not in side_channel_realms()
    teardown_bus(realm_id)  # a second teardown is harmless
    teardown_bus("never-provisioned")
