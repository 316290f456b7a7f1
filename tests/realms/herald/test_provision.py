from __future__ import annotations

import pytest

from realms.herald.bus import BusAgent, agent_credentials, dm_room, provision_bus
from realms.herald.directory import agent_localpart
from realms.herald.matrix import matrix_client
from realms.herald.models import BusUser

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def test_commons_holds_every_agent_the_operator_and_the_system(homeserver, small_bus):
    with matrix_client() as client:
        members = client.joined_members(small_bus.commons_room_id)
        name = client.get_state(small_bus.commons_room_id, "m.room.name")["name"]
        rules = client.get_state(small_bus.commons_room_id, "m.room.join_rules")
    assert name == "Realm Commons"
    assert rules["join_rule"] == "invite"
    assert members == {
        *small_bus.users.values(),
        small_bus.operator_user_id,
        small_bus.system_user_id,
    }
    assert small_bus.users["alice"] == (
        f"@{agent_localpart(small_bus.realm_id, 'alice')}:{homeserver.server_name}"
    )
    assert small_bus.dm_rooms == {}


def test_tokens_are_per_agent_work_and_are_encrypted_at_rest(homeserver, small_bus, agent_client):
    creds = agent_credentials(small_bus.realm_id, "bob")
    assert creds.mxid == small_bus.users["bob"]
    assert creds.commons_room_id == small_bus.commons_room_id
    stored = BusUser.objects.get(user_id=creds.mxid).token_encrypted
    assert creds.access_token not in stored
    whoami = agent_client(small_bus.realm_id, "bob").get("/_matrix/client/v3/account/whoami")
    assert whoami.json()["user_id"] == creds.mxid


def test_provisioning_again_reuses_users_and_rooms(homeserver, small_bus, realm_id):
    before = agent_credentials(realm_id, "alice")
    again = provision_bus(
        realm_id,
        [BusAgent("alice"), BusAgent("bob"), BusAgent("judge", role="referee")],
        turns=False,
        allow_side_channels=False,
    )
    assert again.commons_room_id == small_bus.commons_room_id
    assert agent_credentials(realm_id, "alice").access_token == before.access_token


def test_a_user_made_before_a_failure_gets_a_working_token_on_the_retry(
    homeserver, small_bus, realm_id, agent_client
):
    # The homeserver made bob, but his token never reached the database (the run failed
    # first): the retry must log in as the existing user rather than give up.
    BusUser.objects.filter(user_id=small_bus.users["bob"]).update(token_encrypted="")
    again = provision_bus(
        realm_id,
        [BusAgent("alice"), BusAgent("bob"), BusAgent("judge", role="referee")],
        turns=False,
        allow_side_channels=False,
    )
    assert again.users["bob"] == small_bus.users["bob"]
    whoami = agent_client(realm_id, "bob").get("/_matrix/client/v3/account/whoami")
    assert whoami.json()["user_id"] == small_bus.users["bob"]


def test_dm_rooms_follow_peers_and_include_referee(homeserver, realm_id):
    agents = [
        BusAgent("ann", private_messaging={"enabled": True, "peers": ["bea"]}),
        BusAgent("bea", private_messaging={"enabled": True}),
        BusAgent("cid", private_messaging={"enabled": False}),
        BusAgent("dee", private_messaging={"enabled": True, "include_referee": True}),
        BusAgent("ref", role="referee"),
    ]
    bus = provision_bus(realm_id, agents, turns=False, allow_side_channels=False)
    # bea and dee (no peers) may write to everyone but the referee; dee also to the
    # referee; ann only to bea; cid to nobody, but others may write to cid.
    assert set(bus.dm_rooms) == {
        ("ann", "bea"),
        ("ann", "dee"),
        ("bea", "cid"),
        ("bea", "dee"),
        ("cid", "dee"),
        ("dee", "ref"),
    }
    assert dm_room(realm_id, "bea", "ann") == bus.dm_rooms[("ann", "bea")]
    assert dm_room(realm_id, "ann", "cid") is None
    assert dm_room(realm_id, "dee", "ann") == bus.dm_rooms[("ann", "dee")]
    assert dm_room(realm_id, "ann", "ref") is None
    room_id = bus.dm_rooms[("ann", "bea")]
    with matrix_client() as client:
        members = client.joined_members(room_id)
        name = client.get_state(room_id, "m.room.name")["name"]
    assert members == {bus.users["ann"], bus.users["bea"], bus.operator_user_id, bus.system_user_id}
    assert name == "DM: ann · bea"
    creds = agent_credentials(realm_id, "bea")
    assert creds.dm_rooms == {
        "ann": bus.dm_rooms[("ann", "bea")],
        "cid": bus.dm_rooms[("bea", "cid")],
        "dee": bus.dm_rooms[("bea", "dee")],
    }


def test_bad_input_is_refused_before_anything_happens(homeserver, realm_id):
    with pytest.raises(ValueError, match="duplicate agent ids"):
        provision_bus(
            realm_id, [BusAgent("a"), BusAgent("a")], turns=False, allow_side_channels=False
        )
    with pytest.raises(ValueError, match="no agents"):
        provision_bus(realm_id, [], turns=False, allow_side_channels=False)
    assert not BusUser.objects.exists()
