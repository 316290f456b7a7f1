"""runtime.http against real local servers: raw asyncio servers that answer as told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest

from runtime import http

pytestmark = pytest.mark.timeout(30)

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    first, *lines = head.split("\r\n")
    headers = {}
    for line in lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return first, headers, body


class Server:
    """A Unix-socket (or TCP) server; ``handler`` serves each connection; counts them."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.connections = 0
        self.requests: list[tuple[str, dict[str, str], bytes]] = []

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def read(self, reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes]:
        request = await _read_request(reader)
        self.requests.append(request)
        return request


def _answer(body: bytes, status: str = "200 OK", extra: str = "") -> bytes:
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{extra}"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


async def _unix(tmp_path, handler: Handler) -> tuple[Server, asyncio.AbstractServer, str]:
    server = Server(handler)
    path = str(tmp_path / "s.sock")
    listening = await asyncio.start_unix_server(server._serve, path=path)
    return server, listening, path


async def test_keep_alive_reuses_one_connection_and_overlapping_calls_get_two(tmp_path):
    async def handler(reader, writer):
        while True:
            first, _, body = await server.read(reader)
            if "slow" in first:
                await asyncio.sleep(0.2)
            writer.write(_answer(json.dumps({"line": first, "body": body.decode()}).encode()))
            await writer.drain()

    server, listening, path = await _unix(tmp_path, handler)
    async with listening:
        client = http.client("http://peer/api", socket_path=path, timeout=http.Timeout(5))
        async with client:
            first = await client.request("POST", "one", json={"a": "é"})
            second = await client.request("GET", "/two", params={"q": "x y"})
            assert first.json() == {"line": "POST /api/one HTTP/1.1", "body": '{"a":"é"}'}
            assert second.json()["line"] == "GET /api/two?q=x+y HTTP/1.1"
            assert server.connections == 1
            await asyncio.gather(client.request("GET", "slow"), client.request("GET", "slow"))
            assert server.connections == 2
            assert server.requests[0][1]["host"] == "peer"


async def test_tcp_with_chunked_bodies_and_streamed_lines(tmp_path):
    async def handler(reader, writer):
        while True:
            await server.read(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n")
            writer.write(b"content-type: text/event-stream\r\n\r\n")
            for piece in (b'data: {"a":', b" 1}\r", b"\n\r\n", b"data: 2\n\n"):
                writer.write(b"%x;ext=1\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                await asyncio.sleep(0.01)
            writer.write(b"0\r\nx-trailer: yes\r\n\r\n")
            await writer.drain()

    server = Server(handler)
    listening = await asyncio.start_server(server._serve, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    async with (
        listening,
        http.client(f"http://127.0.0.1:{port}", timeout=http.Timeout(5)) as client,
    ):
        async with client.stream("GET", "/events") as response:
            lines = [line async for line in response.aiter_lines()]
        assert lines == ['data: {"a": 1}', "", "data: 2", ""]
        whole = await client.request("GET", "/again")
        assert whole.content == b'data: {"a": 1}\r\n\r\ndata: 2\n\n'
        assert server.connections == 1  # the chunked answer ended cleanly: reused


async def test_a_server_closing_mid_answer_is_a_protocol_error_and_the_next_call_works(
    tmp_path,
):
    async def handler(reader, writer):
        first, _, _ = await server.read(reader)
        if "cut" in first:
            writer.write(b'HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{"partial')
            await writer.drain()
            return  # closes the connection with 91 bytes owed
        writer.write(_answer(b"{}"))
        await writer.drain()

    server, listening, path = await _unix(tmp_path, handler)
    async with (
        listening,
        http.client("http://peer", socket_path=path, timeout=http.Timeout(5)) as c,
    ):
        with pytest.raises(http.ProtocolError, match="mid-answer"):
            await c.request("POST", "/cut", json={})
        assert (await c.request("POST", "/fine", json={})).json() == {}


async def test_an_idle_connection_the_server_closed_is_not_reused(tmp_path):
    async def handler(reader, writer):
        await server.read(reader)
        writer.write(_answer(b"[1]"))  # keep-alive by default, yet it closes right after
        await writer.drain()

    server, listening, path = await _unix(tmp_path, handler)
    async with (
        listening,
        http.client("http://peer", socket_path=path, timeout=http.Timeout(5)) as c,
    ):
        assert (await c.request("POST", "/a", json={})).json() == [1]
        await asyncio.sleep(0.05)
        assert (await c.request("POST", "/b", json={})).json() == [1]
        assert server.connections == 2


async def test_a_connection_idle_for_long_is_not_reused_for_a_post(tmp_path):
    """A server ends an idle connection on its own clock; a POST sent just as it does is
    answered by nobody and cannot be repeated, so a long-idle connection is not reused."""
    loop = asyncio.get_running_loop()

    async def handler(reader, writer):
        answered = loop.time()
        while True:
            await server.read(reader)
            if loop.time() - answered > 1.5:
                return  # its keep-alive timer fired as this request came in: no answer
            writer.write(_answer(b"[1]"))
            await writer.drain()
            answered = loop.time()

    server, listening, path = await _unix(tmp_path, handler)
    async with (
        listening,
        http.client("http://peer", socket_path=path, timeout=http.Timeout(5)) as c,
    ):
        assert (await c.request("POST", "/a", json={})).json() == [1]
        assert (await c.request("POST", "/b", json={})).json() == [1]
        assert server.connections == 1  # a connection just used is kept alive
        await asyncio.sleep(2.2)
        assert (await c.request("POST", "/c", json={})).json() == [1]
        assert server.connections == 2


async def test_read_timeouts_and_connect_errors(tmp_path):
    async def handler(reader, writer):
        await server.read(reader)
        await asyncio.sleep(10)  # never answers in time

    server, listening, path = await _unix(tmp_path, handler)
    async with (
        listening,
        http.client("http://peer", socket_path=path, timeout=http.Timeout(0.2)) as c,
    ):
        with pytest.raises(http.ReadTimeout, match="waiting for the answer"):
            await c.request("GET", "/")
        # A per-call timeout overrides the client's.
        started = asyncio.get_running_loop().time()
        with pytest.raises(http.ReadTimeout):
            await c.request("GET", "/", timeout=http.Timeout(0.05))
        assert asyncio.get_running_loop().time() - started < 0.18
    gone = str(tmp_path / "nobody.sock")
    async with http.client("http://peer", socket_path=gone, timeout=http.Timeout(1)) as c:
        with pytest.raises(http.ConnectError):
            await c.request("GET", "/")


async def test_redirects_are_followed_within_the_origin_only(tmp_path):
    async def handler(reader, writer):
        while True:
            first, _, _ = await server.read(reader)
            if "/old" in first:
                writer.write(_answer(b"", "307 Temporary Redirect", "location: /new\r\n"))
            elif "/away" in first:
                where = "location: http://elsewhere.example/steal\r\n"
                writer.write(_answer(b"", "302 Found", where))
            else:
                writer.write(_answer(json.dumps(first).encode()))
            await writer.drain()

    server, listening, path = await _unix(tmp_path, handler)
    async with listening:
        client = http.client(
            "http://peer",
            socket_path=path,
            headers={"Authorization": "Bearer secret"},
            timeout=http.Timeout(5),
            follow_redirects=True,
        )
        async with client:
            moved = await client.request("POST", "/old", json={"x": 1})
            assert moved.json() == "POST /new HTTP/1.1"
            away = await client.request("POST", "/away", json={})
            assert away.status_code == 302  # handed back, not followed
    hosts = [headers["host"] for _, headers, _ in server.requests]
    assert hosts == ["peer"] * 3


def test_line_breaks_in_headers_are_refused():
    with pytest.raises(ValueError, match="line break"):
        http.client("http://peer", headers={"x": "a\r\ninjected: 1"}, timeout=http.Timeout(1))


async def test_an_https_target_goes_to_httpx_and_its_errors_are_the_runtimes(tmp_path):
    from runtime.http_tls import TlsClient

    gone = str(tmp_path / "nobody.sock")
    async with http.client("https://peer", socket_path=gone, timeout=http.Timeout(1)) as c:
        assert isinstance(c, TlsClient)
        with pytest.raises(http.ConnectError):
            await c.request("GET", "/")
