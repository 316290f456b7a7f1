"""Client endpoints an agent could use to reach outside its realm or to store data on the
host without bound: the homeserver refuses them to agent tokens."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import pytest

from realms.herald.bus import BusAgent, RealmBus, provision_bus
from realms.herald.matrix import matrix_client

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

API = "/_matrix/client/v3"


def _q(value: str) -> str:
    return quote(value, safe="")


@pytest.fixture
def two_realms(homeserver, realm_id) -> tuple[RealmBus, RealmBus]:
    mine = provision_bus(
        realm_id, [BusAgent("a"), BusAgent("b")], turns=False, allow_side_channels=False
    )
    other = provision_bus(f"{realm_id}-o", [BusAgent("z")], turns=False, allow_side_channels=False)
    return mine, other


def _to_device_events(client) -> list[dict[str, object]]:
    synced = client.get(f"{API}/sync?timeout=0")
    assert synced.status_code == 200, synced.text
    return list(synced.json().get("to_device", {}).get("events", []))


@pytest.mark.parametrize("peer", ["same realm", "other realm"])
def test_to_device_messages_are_refused(two_realms, agent_client, peer):
    mine, other = two_realms
    sender = agent_client(mine.realm_id, "a")
    realm, agent = (mine.realm_id, "b") if peer == "same realm" else (other.realm_id, "z")
    target = agent_client(realm, agent)
    _to_device_events(target)  # the first sync creates the device's stream position
    target_id = (mine if peer == "same realm" else other).users[agent]
    sent = sender.request(
        "PUT",
        f"{API}/sendToDevice/org.example.note/t1",
        {"messages": {target_id: {"*": {"body": "meet me off the record"}}}},
    )
    assert sent.status_code == 403, sent.text
    assert sent.json()["errcode"] == "M_FORBIDDEN"
    assert _to_device_events(target) == []


def _files(root: Path) -> list[Path]:
    return [Path(d) / f for d, _, names in os.walk(root) for f in names]


def test_a_media_upload_from_an_agent_stores_nothing(homeserver, two_realms, agent_client):
    mine, _ = two_realms
    media = homeserver.config.data_dir / "media"
    before = _files(media)
    agent = agent_client(mine.realm_id, "a")
    blob = os.urandom(4 * 1024 * 1024)
    for path in (
        "/_matrix/media/v3/upload",
        "/_matrix/media/r0/upload",
        "/_matrix/media/v1/create",
    ):
        uploaded = agent.request("POST", f"{path}?filename=x.bin", content=blob)
        assert uploaded.status_code in (403, 404), (path, uploaded.status_code, uploaded.text)
    assert _files(media) == before


# (method, path, body): {me} the agent, {room} its Commons, {peer} another realm's agent.
REFUSED = {
    "account data": ("PUT", "/user/{me}/account_data/org.example.stash", {"blob": "x" * 60000}),
    "room account data": (
        "PUT",
        "/user/{me}/rooms/{room}/account_data/org.example.stash",
        {"blob": "x" * 60000},
    ),
    "room tags": ("PUT", "/user/{me}/rooms/{room}/tags/u.stash", {"order": 0.5}),
    "stored filter": ("POST", "/user/{me}/filter", {"room": {"timeline": {"limit": 1}}}),
    "device keys": (
        "POST",
        "/keys/upload",
        {"one_time_keys": {f"signed_curve25519:K{i}": {"key": "x" * 40} for i in range(50)}},
    ),
    "key backup": (
        "POST",
        "/room_keys/version",
        {"algorithm": "m.megolm_backup.v1.curve25519-aes-sha2", "auth_data": {}},
    ),
    "room report": ("POST", "/rooms/{room}/report", {"reason": "x" * 1000}),
    "user report": ("POST", "/users/{peer}/report", {"reason": "x" * 1000}),
    "own profile": ("PUT", "/profile/{me}/displayname", {"displayname": "the operator"}),
    "other realm's profile": ("GET", "/profile/{peer}", None),
    "room alias": ("PUT", "/directory/room/{alias}", {"room_id": "{room_raw}"}),
    "room directory": ("PUT", "/directory/list/room/{room}", {"visibility": "public"}),
    "public rooms": ("GET", "/publicRooms", None),
    "user directory": ("POST", "/user_directory/search", {"search_term": "bp"}),
    "knock": ("POST", "/knock/{room}", {}),
    "presence": ("PUT", "/presence/{me}/status", {"presence": "online", "status_msg": "x" * 100}),
    "pusher": (
        "POST",
        "/pushers/set",
        {
            "kind": "http",
            "app_id": "x",
            "pushkey": "k",
            "app_display_name": "x",
            "device_display_name": "x",
            "lang": "en",
            "data": {"url": "http://127.0.0.1/x"},
        },
    ),
    "openid token": ("POST", "/user/{me}/openid/request_token", {}),
}


@pytest.mark.parametrize("what", sorted(REFUSED))
def test_agents_may_not_use_endpoints_the_platform_does_not(
    homeserver, two_realms, agent_client, what
):
    mine, other = two_realms
    method, template, body = REFUSED[what]
    values = {
        "me": _q(mine.users["a"]),
        "room": _q(mine.commons_room_id),
        "room_raw": mine.commons_room_id,
        "peer": _q(other.users["z"]),
        "alias": _q(f"#stash-{mine.realm_id}:{homeserver.server_name}"),
    }
    path = template.format(**values)
    if isinstance(body, dict) and body.get("room_id"):
        body = {"room_id": mine.commons_room_id}
    agent = agent_client(mine.realm_id, "a")
    for prefix in (API, "/_matrix/client/r0", "/_matrix/client/unstable"):
        answered = agent.request(method, prefix + path, body)
        assert answered.status_code == 403, (prefix, answered.status_code, answered.text)
        assert answered.json()["errcode"] == "M_FORBIDDEN"


def test_refused_account_data_is_not_stored(homeserver, two_realms, agent_client):
    mine, _ = two_realms
    me = mine.users["a"]
    agent = agent_client(mine.realm_id, "a")
    path = f"{API}/user/{_q(me)}/account_data/org.example.stash"
    assert agent.request("PUT", path, {"blob": "x" * 60000}).status_code == 403
    with matrix_client() as client:
        stored = client._http.get(path, params={"user_id": me})
    assert stored.status_code == 404, stored.text


def test_the_platform_itself_keeps_the_endpoints_it_uses(homeserver, two_realms, agent_client):
    # Chat still works for the agent, and the application service may still name it.
    mine, _ = two_realms
    agent = agent_client(mine.realm_id, "a")
    assert agent.send(mine.commons_room_id, "still here").status_code == 200
    assert agent.get(f"{API}/sync?timeout=0").status_code == 200
    with matrix_client() as client:
        client.set_displayname(mine.users["a"], "a")


@pytest.mark.parametrize(
    "path",
    [
        "/_matrix/client/v3//sendToDevice/org.example.note/t2",
        "/_matrix/client/v3/sendTo%44evice/org.example.note/t3",
        "/_matrix/client/unstable/org.example.msc0000/sendToDevice/org.example.note/t4",
        "/_matrix/client/v3/sendToDevice/org.example.note/t5?access_token=forged",
    ],
)
def test_spelling_a_refused_path_differently_does_not_reach_it(two_realms, agent_client, path):
    mine, other = two_realms
    sender = agent_client(mine.realm_id, "a")
    sent = sender.request("PUT", path, {"messages": {other.users["z"]: {"*": {"body": "psst"}}}})
    assert sent.status_code in (400, 401, 403, 404), (path, sent.status_code, sent.text)


def test_refusals_are_read_after_the_version_and_namespace():
    from realms.herald.refusals import refusal

    assert refusal("/_matrix/client/v3/sendToDevice/m.x/1") == "to-device messages"
    assert refusal("/_matrix/client/unstable/org.matrix.msc3814.v1/dehydrated_device")
    assert refusal("/_matrix/client/r0/user/%40a%3Ahs/rooms/%21r%3Ahs/tags/u.x")
    assert refusal("/_matrix/client/v3/rooms/%21r%3Ahs/send/m.room.message/1") is None
    assert refusal("/_matrix/client/v3/sync") is None
    assert refusal("/_matrix/client/versions") is None
    assert refusal("/_matrix/media/v3/upload") is None  # not a client path: media is off
