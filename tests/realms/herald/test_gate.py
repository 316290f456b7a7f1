from __future__ import annotations

from urllib.parse import quote

import pytest

from realms.herald.bus import BusAgent, provision_bus

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


def _create_room(client):
    return client.post(
        "/_matrix/client/v3/createRoom", {"name": "secret", "preset": "private_chat"}
    )


def _invite(client, room_id, user_id):
    return client.post(
        f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/invite", {"user_id": user_id}
    )


def test_agents_may_not_open_side_channels(homeserver, realm_id, agent_client):
    bus = provision_bus(
        realm_id, [BusAgent("a"), BusAgent("b")], turns=False, allow_side_channels=False
    )
    a = agent_client(realm_id, "a")
    created = _create_room(a)
    assert created.status_code == 403, created.text
    assert created.json()["errcode"] == "M_FORBIDDEN"
    invited = _invite(a, bus.commons_room_id, bus.users["b"])
    assert invited.status_code == 403


def test_side_channel_realms_may_create_rooms_and_invite_each_other(
    homeserver, realm_id, agent_client
):
    bus = provision_bus(
        realm_id, [BusAgent("a"), BusAgent("b")], turns=False, allow_side_channels=True
    )
    a, b = agent_client(realm_id, "a"), agent_client(realm_id, "b")
    created = _create_room(a)
    assert created.status_code == 200, created.text
    room_id = created.json()["room_id"]
    assert _invite(a, room_id, bus.users["b"]).status_code == 200
    joined = b.post(f"/_matrix/client/v3/join/{quote(room_id, safe='')}", {})
    assert joined.status_code == 200, joined.text


def test_side_channels_stay_inside_the_realm(homeserver, realm_id, agent_client):
    open_bus = provision_bus(realm_id, [BusAgent("a")], turns=False, allow_side_channels=True)
    closed_id = realm_id + "x"
    closed_bus = provision_bus(closed_id, [BusAgent("c")], turns=False, allow_side_channels=False)
    a, c = agent_client(realm_id, "a"), agent_client(closed_id, "c")
    room_id = _create_room(a).json()["room_id"]
    assert _invite(a, room_id, closed_bus.users["c"]).status_code == 403
    # …and the confined agent cannot join a room it was not invited to.
    joined = c.post(f"/_matrix/client/v3/join/{quote(room_id, safe='')}", {})
    assert joined.status_code == 403
    assert open_bus.users["a"] != closed_bus.users["c"]


def test_the_gate_matches_realms_exactly_not_by_prefix(homeserver, realm_id, agent_client):
    """Realm ``x`` allows side channels; realm ``x-b`` does not. The second one's agents
    have ids that start like the first one's, and must stay confined."""
    open_bus = provision_bus(realm_id, [BusAgent("a")], turns=False, allow_side_channels=True)
    closed_id = f"{realm_id}-b"
    provision_bus(closed_id, [BusAgent("c")], turns=False, allow_side_channels=False)
    c = agent_client(closed_id, "c")
    created = _create_room(c)
    assert created.status_code == 403, created.text
    invited = _invite(c, open_bus.commons_room_id, open_bus.users["a"])
    assert invited.status_code == 403, invited.text


def test_two_side_channel_realms_cannot_meet_in_a_public_room(homeserver, realm_id, agent_client):
    provision_bus(realm_id, [BusAgent("a")], turns=False, allow_side_channels=True)
    other_id = f"o{realm_id}"
    other = provision_bus(other_id, [BusAgent("z")], turns=False, allow_side_channels=True)
    a, z = agent_client(realm_id, "a"), agent_client(other_id, "z")
    public = a.post(
        "/_matrix/client/v3/createRoom",
        {"preset": "public_chat", "visibility": "private", "name": "open door"},
    )
    assert public.status_code == 200, public.text
    room_id = public.json()["room_id"]
    joined = z.post(f"/_matrix/client/v3/join/{quote(room_id, safe='')}", {})
    assert joined.status_code == 403, joined.text
    # Nor may the room be opened to the other realm in the create call itself.
    with_invite = a.post(
        "/_matrix/client/v3/createRoom", {"preset": "private_chat", "invite": [other.users["z"]]}
    )
    assert with_invite.status_code == 403, with_invite.text


def test_side_channel_rooms_get_no_alias_and_no_directory_entry(homeserver, realm_id, agent_client):
    provision_bus(realm_id, [BusAgent("a")], turns=False, allow_side_channels=True)
    a = agent_client(realm_id, "a")
    aliased = a.post(
        "/_matrix/client/v3/createRoom", {"preset": "private_chat", "room_alias_name": realm_id}
    )
    assert aliased.status_code == 403, aliased.text
    listed = a.post(
        "/_matrix/client/v3/createRoom", {"preset": "private_chat", "visibility": "public"}
    )
    assert listed.status_code == 403, listed.text
