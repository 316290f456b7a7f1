from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from chronicle.models import Message
from realms.herald.bus import BusAgent, RealmBus, agent_credentials, provision_bus
from realms.herald.matrix import UDS_HEADERS
from tests.fixtures.homeserver import LiveHomeserver


class AgentClient:
    """What an agent's runtime does on the bus, with the agent's own token."""

    def __init__(self, homeserver: LiveHomeserver, token: str) -> None:
        self._http = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(homeserver.socket_path)),
            base_url="http://homeserver",
            headers={"Authorization": f"Bearer {token}", **UDS_HEADERS},
            timeout=30,
        )
        self._txn = 0

    def send(self, room_id: str, text: str) -> httpx.Response:
        self._txn += 1
        return self._http.put(
            f"/_matrix/client/v3/rooms/{quote(room_id, safe='')}/send/m.room.message/"
            f"t{time.time_ns()}-{self._txn}",
            json={"msgtype": "m.text", "body": text},
        )

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return self._http.post(path, json=body)

    def get(self, path: str) -> httpx.Response:
        return self._http.get(path)

    def request(
        self, method: str, path: str, body: Any = None, *, content: bytes | None = None
    ) -> httpx.Response:
        return self._http.request(method, path, json=body, content=content)

    def close(self) -> None:
        self._http.close()


def wait_for(predicate: Callable[[], bool], timeout: float = 45.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what or predicate}")


def bodies(realm_id: str) -> list[str]:
    return list(Message.objects.filter(realm_id=realm_id).values_list("body", flat=True))


@pytest.fixture
def agent_client(homeserver: LiveHomeserver) -> Iterator[Callable[[str, str], AgentClient]]:
    clients: list[AgentClient] = []

    def make(realm_id: str, agent_id: str) -> AgentClient:
        client = AgentClient(homeserver, agent_credentials(realm_id, agent_id).access_token)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def small_bus(homeserver: LiveHomeserver, realm_id: str) -> RealmBus:
    agents = [BusAgent("alice"), BusAgent("bob"), BusAgent("judge", role="referee")]
    return provision_bus(realm_id, agents, turns=False, allow_side_channels=False)
