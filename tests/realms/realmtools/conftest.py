"""Realmtools tests: a real server on a Unix socket, real tokens, realms in the test DB."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from realms.models import Realm
from realms.realmtools.identity import mint_token
from realms.realmtools.server import RealmtoolsServer
from tests.fixtures.realms import build_realm

PLAYERS = [
    {"id": "orin", "role": "participant"},
    {"id": "vela", "role": "participant"},
    {"id": "zed", "role": "participant"},
]
REFEREE = {"id": "themis", "role": "referee"}


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealmtoolsServer]:
    sock = tmp_path_factory.mktemp("rt") / "realmtools.sock"
    srv = RealmtoolsServer(uds_path=sock, port=0)
    srv.start()
    yield srv
    srv.stop()


def uds_client(path: Path, token: str | None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=str(path)),
        headers=headers,
        timeout=httpx.Timeout(30),
    )


def _decode(result: Any) -> Any:
    if result.structuredContent is not None:
        data = result.structuredContent
        if set(data) == {"result"}:
            return data["result"]
        return data
    text = getattr(result.content[0], "text", "") if result.content else ""
    try:
        return json.loads(text)
    except ValueError:
        return text


class Agent:
    """An MCP client for one token, speaking to the server over its Unix socket."""

    def __init__(self, server: RealmtoolsServer, token: str) -> None:
        assert server.uds_path is not None
        self.path = server.uds_path
        self.token = token

    async def _session(self, work: Any) -> Any:
        async with (
            uds_client(self.path, self.token) as http,
            streamable_http_client("http://realmtools/mcp", http_client=http) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await work(session)

    def call(self, name: str, **args: Any) -> Any:
        async def work(session: ClientSession) -> Any:
            result = await session.call_tool(name, args)
            if result.isError:
                raise AssertionError(f"{name} failed: {getattr(result.content[0], 'text', '')}")
            return _decode(result)

        return asyncio.run(self._session(work))

    def calls(self, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        async def work(session: ClientSession) -> list[Any]:
            out = []
            for name, args in calls:
                out.append(_decode(await session.call_tool(name, args)))
            return out

        return list(asyncio.run(self._session(work)))

    def tools(self) -> set[str]:
        async def work(session: ClientSession) -> set[str]:
            return {t.name for t in (await session.list_tools()).tools}

        return set(asyncio.run(self._session(work)))


class RealmMaker:
    def __init__(self, server: RealmtoolsServer, root: Path) -> None:
        self.server = server
        self.root = root

    def __call__(
        self,
        spec: dict[str, Any] | None = None,
        agents: list[dict[str, Any]] | None = None,
        state: str = Realm.State.RUNNING,
    ) -> Realm:
        """A launched realm moved to ``state``; the roster defaults to three players
        and a referee."""
        return build_realm(
            f"rt-{uuid.uuid4().hex[:10]}",
            name="realmtools-test",
            spec=spec,
            agents=agents if agents is not None else [*PLAYERS, REFEREE],
            state=state,
            root=self.root,
        )

    def agent(self, realm: Realm, agent_id: str, grants: list[str] | None = None) -> Agent:
        agents = realm.project["agents"]
        me = next(a for a in agents if a["id"] == agent_id)
        roster = [a["id"] for a in agents if a.get("role") != "referee"]
        role: Literal["referee", "player"] = "referee" if me.get("role") == "referee" else "player"
        tools = me.get("tools", []) if grants is None else grants
        return Agent(self.server, mint_token(realm.realm_id, agent_id, role, roster, tools))


@pytest.fixture
def realms(server: RealmtoolsServer, transactional_db: None, tmp_path: Path) -> RealmMaker:
    return RealmMaker(server, tmp_path / "packages")
