"""The gateway's client for non-streamed upstream calls: HTTP/1.1 on an asyncio protocol.

Every agent's model call is a non-streamed POST, so this is the hot path. aiohttp cost about
70 µs of CPU a call on its own (timeout handles, header multidicts, its stream reader) where
this costs about 10; on a gateway bound by one core that is a fifth of its throughput.
Streams stay on aiohttp (``passthrough.open_stream``).

What it does: one pool of kept-alive connections per origin (``http`` or ``https``, with
certificates checked), ``Content-Length``, chunked and until-close bodies (parsed by
httptools, the parser uvicorn uses), one deadline for the whole call, bounded headers and
body. A connection is reused only when the server kept it alive, it answered in full, and
it has been idle less than ``keepalive``; a connection the server has closed is dropped as
soon as its end arrives. A redirect is never followed (a 3xx is the answer): it could take
the provider key somewhere else. A failed POST is never sent again (the provider may have begun
generating, and would bill twice); the caller gets the failure.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import cast
from urllib.parse import urlsplit

import httptools

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
_NO_BODY = frozenset({204, 304})


class UpstreamProtocolError(Exception):
    """The provider's answer was not HTTP/1.1 we can read, or it closed mid-answer."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


class _Conn(asyncio.Protocol):
    """One connection, answering one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[Answer] | None = None
        self.closed = False
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self._body: list[bytes] = []
        self._size = 0
        self._head = 0  # header bytes so far
        self._headed = False  # the status line and headers are in
        self._framed = False  # a Content-Length or chunked body: its end is known
        self._complete = False
        self._keep = False

    # -- asyncio.Protocol --
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but behave as one.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:
            # Bytes nobody asked for: the connection is out of step; never reuse it.
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            # A limit of ours, raised in a callback, arrives wrapped: say it as it was.
            cause = exc.__context__
            if not isinstance(cause, UpstreamProtocolError):
                cause = UpstreamProtocolError(f"unreadable answer: {exc}")
            self._fail(cause)

    def eof_received(self) -> bool:
        return False  # close our end too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is None or self.waiter.done():
            return
        if self._headed and not self._framed and not self._complete:
            # An until-close body ends here.
            self._finish()
            return
        self._fail(exc or UpstreamProtocolError("the provider closed the connection"))

    # -- httptools callbacks --
    def on_message_begin(self) -> None:
        if self._complete:
            # A second answer to one request: the connection is out of step.
            self.closed = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head += len(name) + len(value) + 4
        if self._head > MAX_HEAD_BYTES:
            raise UpstreamProtocolError("the answer's headers are too large")
        lower = name.lower()
        if lower == b"content-length" or (
            lower == b"transfer-encoding" and b"chunked" in value.lower()
        ):
            self._framed = True

    def on_headers_complete(self) -> None:
        self._headed = True
        if self.parser.get_status_code() in _NO_BODY:
            self._framed = True

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > MAX_BODY_BYTES:
            raise UpstreamProtocolError("the answer is too large")
        self._body.append(body)

    def on_message_complete(self) -> None:
        self._complete = True
        # Only valid here: once this returns the parser has moved on to the next message.
        self._keep = self.parser.should_keep_alive()
        self._finish()

    # -- ours --
    def _finish(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(Answer(self.parser.get_status_code(), b"".join(self._body)))

    def _fail(self, exc: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        self.close()

    def reusable(self) -> bool:
        return (
            not self.closed
            and self._complete
            and self._framed
            and self._keep
            and self.transport is not None
            and not self.transport.is_closing()
        )

    def send(self, data: bytes) -> asyncio.Future[Answer]:
        assert self.transport is not None
        self._reset()
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


def _header_value(value: str) -> str:
    if "\r" in value or "\n" in value:
        raise UpstreamProtocolError("a header holds a line break")
    return value


class UpstreamClient:
    """Pools of kept-alive connections, one per origin, shared by every call."""

    def __init__(self, *, keepalive: float = 30.0, limit: int = 256) -> None:
        self._keepalive = keepalive
        self._idle: dict[tuple[str, str, int], list[_Conn]] = {}
        self._open: set[_Conn] = set()
        self._slots = asyncio.Semaphore(limit)
        self._tls: ssl.SSLContext | None = None

    async def post(
        self, url: str, body: bytes, headers: dict[str, str], *, timeout: float
    ) -> Answer:
        """POST ``body``; raises TimeoutError, OSError or UpstreamProtocolError."""
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamProtocolError(f"not an http(s) URL: {scheme or '?'}://")
        port = parts.port or (443 if scheme == "https" else 80)
        origin = (scheme, parts.hostname, port)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        netloc = parts.netloc.rpartition("@")[2]
        head = [f"POST {target} HTTP/1.1", f"host: {netloc}", f"content-length: {len(body)}"]
        head += [f"{_header_value(k)}: {_header_value(v)}" for k, v in headers.items()]
        request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body
        async with self._slots, asyncio.timeout(timeout):
            conn = self._take(origin) or await self._connect(origin)
            try:
                answer = await conn.send(request)
            except BaseException:
                conn.close()
                self._open.discard(conn)
                raise
            self._give_back(origin, conn)
            return answer

    def _take(self, origin: tuple[str, str, int]) -> _Conn | None:
        idle = self._idle.get(origin)
        now = asyncio.get_running_loop().time()
        while idle:
            conn = idle.pop()
            if conn.reusable() and now - conn.idle_since < self._keepalive:
                return conn
            conn.close()
            self._open.discard(conn)
        return None

    async def _connect(self, origin: tuple[str, str, int]) -> _Conn:
        scheme, host, port = origin
        tls = None
        if scheme == "https":
            if self._tls is None:
                self._tls = ssl.create_default_context()
            tls = self._tls
        _, conn = await asyncio.get_running_loop().create_connection(
            _Conn, host, port, ssl=tls, server_hostname=host if tls else None
        )
        self._open.add(conn)
        return conn

    def _give_back(self, origin: tuple[str, str, int], conn: _Conn) -> None:
        conn.waiter = None
        if not conn.reusable():
            conn.close()
            self._open.discard(conn)
            return
        conn.idle_since = asyncio.get_running_loop().time()
        self._idle.setdefault(origin, []).append(conn)

    async def close(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()
