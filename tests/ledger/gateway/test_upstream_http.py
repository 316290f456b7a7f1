"""The gateway's upstream client against real sockets: framing, reuse, limits, failures."""

from __future__ import annotations

import asyncio
import ssl
import subprocess
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from ledger.gateway.upstream_http import MAX_BODY_BYTES, UpstreamClient, UpstreamProtocolError

pytestmark = pytest.mark.timeout(30)

OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 12\r\n\r\n{"ok": true}'


class Server:
    """A raw TCP server on loopback; counts connections and keeps what it was sent."""

    def __init__(
        self,
        answer: Callable[[int, bytes], Awaitable[bytes]],
        *,
        closes: frozenset[int] = frozenset(),
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.answer = answer
        self.tls = tls
        self.closes = closes  # the requests after whose answer it closes the connection
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        # Over TLS by the name the test certificate carries.
        origin = "https://localhost" if self.tls else "http://127.0.0.1"
        return f"{origin}:{self.server.sockets[0].getsockname()[1]}/v1/chat/completions"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = await self.answer(len(self.requests), request)
                writer.write(reply)
                await writer.drain()
                if len(self.requests) in self.closes:
                    await asyncio.sleep(0.02)
                    break
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass  # the client hung up or refused the certificate: this connection is over
        finally:
            writer.close()


def run(coro: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coro)


async def _ok(n: int, request: bytes) -> bytes:
    return OK


def test_a_kept_alive_connection_carries_every_call_and_the_request_is_as_built() -> None:
    async def main() -> None:
        async with Server(_ok) as server:
            client = UpstreamClient()
            for _ in range(3):
                answer = await client.post(
                    server.url, b'{"a": 1}', {"authorization": "Bearer k"}, timeout=5
                )
                assert (answer.status, answer.body) == (200, b'{"ok": true}')
            assert server.connections == 1
            head, _, body = server.requests[0].partition(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            assert lines[0] == b"POST /v1/chat/completions HTTP/1.1"
            assert b"content-length: 8" in lines and b"authorization: Bearer k" in lines
            assert any(line.startswith(b"host: 127.0.0.1:") for line in lines)
            assert body == b'{"a": 1}'
            await client.close()

    run(main())


def test_an_answer_that_closes_or_speaks_http_1_0_is_not_reused() -> None:
    closing = OK.replace(b"content-length", b"connection: close\r\ncontent-length")
    old = OK.replace(b"HTTP/1.1", b"HTTP/1.0")

    for reply in (closing, old):

        async def main(reply: bytes = reply) -> None:
            async def answer(n: int, request: bytes) -> bytes:
                return reply

            async with Server(answer) as server:
                client = UpstreamClient()
                for _ in range(2):
                    assert (await client.post(server.url, b"{}", {}, timeout=5)).status == 200
                assert server.connections == 2
                await client.close()

        run(main())


def test_a_connection_the_server_closed_while_idle_is_dropped_not_written_to() -> None:
    async def main() -> None:
        # The server ends the connection after answering, as uvicorn does once its
        # keep-alive runs out: the client must not send the next call into it.
        async with Server(_ok, closes=frozenset({1})) as server:
            client = UpstreamClient()
            assert (await client.post(server.url, b"{}", {}, timeout=5)).status == 200
            await asyncio.sleep(0.1)
            assert (await client.post(server.url, b"{}", {}, timeout=5)).status == 200
            assert server.connections == 2 and len(server.requests) == 2
            await client.close()

    run(main())


def test_an_idle_connection_past_the_keepalive_is_not_reused() -> None:
    async def main() -> None:
        async with Server(_ok) as server:
            client = UpstreamClient(keepalive=0.05)
            await client.post(server.url, b"{}", {}, timeout=5)
            await client.post(server.url, b"{}", {}, timeout=5)
            assert server.connections == 1
            await asyncio.sleep(0.1)
            await client.post(server.url, b"{}", {}, timeout=5)
            assert server.connections == 2
            await client.close()

    run(main())


def test_chunked_and_until_close_bodies_are_read_whole() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
    )

    async def main() -> None:
        async def answer(n: int, request: bytes) -> bytes:
            return chunked

        async with Server(answer) as server:
            client = UpstreamClient()
            for _ in range(2):
                assert (await client.post(server.url, b"{}", {}, timeout=5)).body == b"hello world"
            assert server.connections == 1  # a chunked body ends where it says
            await client.close()

        async def until_close(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            await r.readuntil(b"\r\n\r\n")
            w.write(b"HTTP/1.1 200 OK\r\n\r\nthe whole ")
            await w.drain()
            await asyncio.sleep(0.05)
            w.write(b"answer")
            w.close()

        listener = await asyncio.start_server(until_close, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        client = UpstreamClient()
        answer2 = await client.post(f"http://127.0.0.1:{port}/x", b"", {}, timeout=5)
        assert answer2.body == b"the whole answer"
        assert not client._idle.get(("http", "127.0.0.1", port))
        listener.close()

    run(main())


def test_a_hung_provider_times_out_and_its_connection_is_closed() -> None:
    async def main() -> None:
        async def hang(n: int, request: bytes) -> bytes:
            await asyncio.sleep(10)
            return OK

        async with Server(hang) as server:
            client = UpstreamClient()
            started = asyncio.get_running_loop().time()
            with pytest.raises(TimeoutError):
                await client.post(server.url, b"{}", {}, timeout=0.3)
            assert asyncio.get_running_loop().time() - started < 2
            assert not client._open and not any(client._idle.values())

    run(main())


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part", "closed the connection"),
        (b"SMTP ready\r\n\r\n", "unreadable answer"),
        (b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n", "headers are too large"),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1)
            + b"a" * (MAX_BODY_BYTES + 1),
            "answer is too large",
        ),
    ],
    ids=["cut-short", "not-http", "huge-headers", "huge-body"],
)
def test_a_broken_answer_is_an_error_never_a_partial_body(reply: bytes, message: str) -> None:
    async def main() -> None:
        async def answer(n: int, request: bytes) -> bytes:
            return reply if n == 1 else OK

        async with Server(answer, closes=frozenset({1})) as server:
            client = UpstreamClient()
            with pytest.raises((UpstreamProtocolError, ConnectionError)) as caught:
                await client.post(server.url, b"{}", {}, timeout=10)
            if isinstance(caught.value, UpstreamProtocolError):
                assert message in str(caught.value)
            else:
                assert message == "closed the connection"
            # The connection is gone: the next call opens its own and succeeds.
            assert (await client.post(server.url, b"{}", {}, timeout=5)).status == 200
            assert server.connections == 2
            await client.close()

    run(main())


def test_a_header_with_a_line_break_is_refused_before_anything_is_sent() -> None:
    async def main() -> None:
        async with Server(_ok) as server:
            client = UpstreamClient()
            with pytest.raises(UpstreamProtocolError, match="line break"):
                await client.post(server.url, b"{}", {"authorization": "k\r\nx: y"}, timeout=5)
            await asyncio.sleep(0.05)
            assert server.connections == 0 and not server.requests

    run(main())


def test_nothing_listening_is_an_os_error() -> None:
    async def main() -> None:
        listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        listener.close()
        await listener.wait_closed()
        with pytest.raises(OSError):
            await UpstreamClient().post(f"http://127.0.0.1:{port}/v1", b"{}", {}, timeout=5)

    run(main())


def test_https_checks_the_providers_certificate(tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"),
            *("-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    async def main() -> None:
        async with Server(_ok, tls=context) as server:
            # A self-signed certificate is not trusted: the call fails before a byte is sent.
            with pytest.raises(ssl.SSLCertVerificationError):
                await UpstreamClient().post(server.url, b"{}", {}, timeout=5)
            assert not server.requests
            # Trusted, the same server answers over TLS, on one kept-alive connection.
            client = UpstreamClient()
            client._tls = ssl.create_default_context(cafile=str(cert))
            for _ in range(2):
                answer = await client.post(server.url, b"{}", {}, timeout=5)
                assert answer.body == b'{"ok": true}'
            # The refused handshake never reached the server's handler: one connection.
            assert len(server.requests) == 2 and server.connections == 1
            await client.close()

    run(main())
