"""The runtime's HTTP client: plain HTTP/1.1 on asyncio streams, over a Unix socket or TCP.

Every peer an agent talks to (the gateway, the homeserver, the MCP servers) is the platform
itself, reached as ``http://`` over a Unix socket or loopback TCP, so this small client is all
most agents need. It replaces httpx there because httpx and its stack (httpcore, anyio, idna,
certifi, email parsing) were about a fifth of an agent's resident memory. An ``https://`` target
is handed to httpx (runtime/http_tls.py), imported only then, with full certificate checks.

What it does: keep-alive connections reused across requests (several at once when calls
overlap, as a long sync poll and a send do), ``Content-Length``, chunked and until-close bodies,
streamed answers (server-sent events), a connect timeout and a timeout on every read and write
(as httpx counts them), and same-origin redirects. Redirects elsewhere are not followed, so a
bearer token never travels to another origin.
"""

from __future__ import annotations

import asyncio
import codecs
import json as jsonlib
from collections.abc import AsyncIterator, Mapping
from typing import Any, Self
from urllib.parse import urlencode, urljoin, urlsplit

from runtime.http_types import (
    Answer,
    Client,
    ConnectError,
    ConnectTimeout,
    HttpError,
    HttpTimeout,
    ProtocolError,
    ReadTimeout,
    Streamed,
    Timeout,
)

_IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 5
_MAX_HEADERS = 128
_MAX_IDLE = 8
# A kept-alive connection idle this long is closed, not reused. A server ends idle
# connections on its own clock (uvicorn after 5 s), and a request sent as it does so is
# answered by nobody: a POST (a tool call, a model call) cannot safely be sent again, so
# the agent would lose it. The MCP client pings every 5 s: exactly at that edge.
_REUSE_IDLE_S = 2.0
_READ_CHUNK = 65536
_LINE_LIMIT = 65536

# Callers see one module: the shared names are runtime.http's as well.
__all__ = [
    "Answer",
    "Client",
    "ConnectError",
    "ConnectTimeout",
    "HttpError",
    "HttpTimeout",
    "PlainClient",
    "ProtocolError",
    "ReadTimeout",
    "Response",
    "Streamed",
    "Timeout",
    "client",
]


def client(
    base_url: str,
    *,
    socket_path: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: Timeout,
    follow_redirects: bool = False,
) -> Client:
    """This module's client for ``http://``; httpx (with TLS) for anything else."""
    if base_url.startswith("http://"):
        return PlainClient(
            base_url,
            socket_path=socket_path,
            headers=headers,
            timeout=timeout,
            follow_redirects=follow_redirects,
        )
    from runtime.http_tls import TlsClient

    return TlsClient(
        base_url,
        socket_path=socket_path,
        headers=headers,
        timeout=timeout,
        follow_redirects=follow_redirects,
    )


def _clean(value: str, what: str) -> str:
    # A CR or LF would let a value end the line and smuggle in headers of its own.
    if "\r" in value or "\n" in value:
        raise ValueError(f"{what} may not contain a line break")
    return value


async def _within(seconds: float | None, kind: type[HttpTimeout], what: str, step: Any) -> Any:
    try:
        async with asyncio.timeout(seconds):
            return await step
    except TimeoutError:
        raise kind(f"timed out {what} ({seconds:g} s)") from None


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.idle_since = 0.0

    def stale(self, now: float) -> bool:
        # A peer that closed an idle connection (or sent something unasked) has left EOF or
        # bytes in the reader by now: such a connection cannot carry another exchange. One
        # idle for long may be closing on the server's side right now.
        return (
            now - self.idle_since >= _REUSE_IDLE_S
            or self.writer.is_closing()
            or self.reader.at_eof()
            or bool(getattr(self.reader, "_buffer", b""))
        )

    def close(self) -> None:
        self.writer.close()


class Response:
    """One answer; its body is read on demand (streaming) or at once (``request``)."""

    def __init__(
        self,
        status_code: int,
        headers: dict[str, str],
        conn: _Conn,
        owner: PlainClient,
        read_timeout: float | None,
        framing: str,
        length: int,
        reusable: bool,
    ) -> None:
        self.status_code = status_code
        self.headers = headers
        self._conn: _Conn | None = conn
        self._owner = owner
        self._read_timeout = read_timeout
        self._framing = framing  # "none", "length", "chunked" or "close"
        self._left = length
        self._reusable = reusable
        self._body: bytes | None = None
        self._started = False
        if framing == "none":
            self._done()

    @property
    def content(self) -> bytes:
        if self._body is None:
            raise RuntimeError("the body has not been read")
        return self._body

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")

    def json(self) -> Any:
        return jsonlib.loads(self.content)

    async def aread(self) -> bytes:
        if self._body is None:
            parts = [part async for part in self.aiter_bytes()]
            self._body = b"".join(parts)
        return self._body

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self._body is not None:
            if self._body:
                yield self._body
            return
        if self._started:
            raise RuntimeError("the body is being read already")
        self._started = True
        while True:
            part = await self._next_part()
            if not part:
                return
            yield part

    async def aiter_lines(self) -> AsyncIterator[str]:
        """The body's lines without their ends (``\\n``, ``\\r\\n`` or ``\\r``)."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a char may span reads
        pending = ""
        async for part in self.aiter_bytes():
            pending += decoder.decode(part)
            # A trailing CR may be the first half of a CRLF split across two reads.
            held = "\r" if pending.endswith("\r") else ""
            text = pending[: len(pending) - len(held)]
            lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            pending = lines.pop() + held
            for line in lines:
                yield line
        pending += decoder.decode(b"", final=True)
        if pending.rstrip("\r"):
            yield pending.rstrip("\r")

    async def aclose(self) -> None:
        if self._conn is not None:  # not read to its end: the connection cannot be reused
            self._owner._forget(self._conn)
            self._conn = None

    async def _read(self, step: Any) -> Any:
        try:
            return await _within(self._read_timeout, ReadTimeout, "reading the answer", step)
        except asyncio.IncompleteReadError:
            await self.aclose()
            raise ProtocolError("the server closed the connection mid-answer") from None
        except (OSError, asyncio.LimitOverrunError, ValueError) as exc:
            await self.aclose()
            raise ProtocolError(f"reading the answer failed: {exc}") from None
        except HttpTimeout:
            await self.aclose()
            raise

    async def _next_part(self) -> bytes:
        conn = self._conn
        if conn is None:
            return b""
        reader = conn.reader
        if self._framing == "length":
            if self._left <= 0:
                self._done()
                return b""
            part: bytes = await self._read(reader.read(min(self._left, _READ_CHUNK)))
            if not part:
                await self.aclose()
                raise ProtocolError("the server closed the connection mid-answer")
            self._left -= len(part)
            if self._left <= 0:
                self._done()
            return part
        if self._framing == "chunked":
            if self._left <= 0:
                line = await self._read(reader.readuntil(b"\r\n"))
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    await self.aclose()
                    raise ProtocolError(f"bad chunk size {line[:40]!r}") from None
                if size == 0:
                    while (await self._read(reader.readuntil(b"\r\n"))) != b"\r\n":
                        pass  # trailers: nothing the runtime reads
                    self._done()
                    return b""
                self._left = size
            part = await self._read(reader.readexactly(min(self._left, _READ_CHUNK)))
            self._left -= len(part)
            if self._left == 0 and (await self._read(reader.readexactly(2))) != b"\r\n":
                await self.aclose()
                raise ProtocolError("a chunk did not end where its size said")
            return part
        part = await self._read(reader.read(_READ_CHUNK))  # until the server closes
        if not part:
            self._done()
        return part

    def _done(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._reusable and self._framing != "close":
            self._owner._release(conn)
        else:
            self._owner._forget(conn)


class _Streamed:
    def __init__(self, opening: Any) -> None:
        self._opening = opening
        self._response: Response | None = None

    async def __aenter__(self) -> Response:
        self._response = await self._opening
        return self._response

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            await self._response.aclose()


class PlainClient:
    """Plain-HTTP/1.1 client for one base URL, with a small pool of kept-alive connections."""

    def __init__(
        self,
        base_url: str,
        *,
        socket_path: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout,
        follow_redirects: bool = False,
    ) -> None:
        self._base = base_url
        self._socket_path = socket_path or None
        self._headers = {
            _clean(k, "a header").lower(): _clean(v, "a header") for k, v in (headers or {}).items()
        }
        self._timeout = timeout
        self._follow = follow_redirects
        self._idle: list[_Conn] = []
        self._open: set[_Conn] = set()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        for conn in self._open:
            conn.close()
        self._open.clear()
        self._idle.clear()

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> Response:
        response = await self._send(method, url, params, json, headers, timeout)
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> _Streamed:
        return _Streamed(self._send(method, url, None, json, headers, timeout))

    def _release(self, conn: _Conn) -> None:
        if conn in self._open and len(self._idle) < _MAX_IDLE:
            conn.idle_since = asyncio.get_running_loop().time()
            self._idle.append(conn)
        else:
            self._forget(conn)

    def _forget(self, conn: _Conn) -> None:
        conn.close()
        self._open.discard(conn)

    def _target(self, url: str, params: Mapping[str, str] | None) -> str:
        if "://" not in url:
            base = self._base if self._base.endswith("/") else self._base + "/"
            url = base + url.lstrip("/")
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        return url

    async def _send(
        self,
        method: str,
        url: str,
        params: Mapping[str, str] | None,
        json: Any,
        headers: Mapping[str, str] | None,
        timeout: Timeout | None,
    ) -> Response:
        body = None
        if json is not None:
            body = jsonlib.dumps(json, ensure_ascii=False, separators=(",", ":")).encode()
        full = self._target(url, params)
        for _ in range(_MAX_REDIRECTS + 1):
            response = await self._exchange(method, full, body, headers, timeout or self._timeout)
            location = response.headers.get("location")
            if not (self._follow and response.status_code in _REDIRECTS and location):
                return response
            following = urljoin(full, location)
            if urlsplit(following)[:2] != urlsplit(full)[:2]:
                return response  # another origin: not followed, so credentials stay here
            await response.aread()
            await response.aclose()
            full = following
            if response.status_code == 303 or (
                response.status_code in (301, 302) and method == "POST"
            ):
                method, body = ("GET" if method != "HEAD" else "HEAD"), None
        raise ProtocolError(f"more than {_MAX_REDIRECTS} redirects")

    async def _exchange(
        self,
        method: str,
        url: str,
        body: bytes | None,
        headers: Mapping[str, str] | None,
        timeout: Timeout,
    ) -> Response:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"not a plain http URL: {url!r}")
        target = _clean(parts.path or "/", "a URL") + (f"?{parts.query}" if parts.query else "")
        merged = dict(self._headers)
        merged.update(
            {
                _clean(k, "a header").lower(): _clean(v, "a header")
                for k, v in (headers or {}).items()
            }
        )
        merged.setdefault("accept", "*/*")
        if body is not None:
            merged.setdefault("content-type", "application/json")
        if body is not None or method in ("POST", "PUT", "PATCH"):
            merged["content-length"] = str(len(body or b""))
        lines = [f"{method} {target} HTTP/1.1", f"host: {_clean(parts.netloc, 'a URL')}"]
        lines += [f"{k}: {v}" for k, v in merged.items() if k != "host"]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        payload = head + (body or b"")
        while True:
            conn, reused = await self._connection(parts.hostname, parts.port or 80, timeout)
            try:
                return await self._answer(conn, method, payload, timeout)
            except ProtocolError as exc:
                # A kept-alive connection the server closed just as it was reused: nothing was
                # answered, so a request that may be repeated is sent again on a fresh one.
                if not (reused and method in _IDEMPOTENT and isinstance(exc, _Unanswered)):
                    raise

    async def _connection(self, host: str, port: int, timeout: Timeout) -> tuple[_Conn, bool]:
        while self._idle:
            conn = self._idle.pop()
            if conn.stale(asyncio.get_running_loop().time()):
                self._forget(conn)
            else:
                return conn, True
        try:
            if self._socket_path:
                opening = asyncio.open_unix_connection(self._socket_path, limit=_LINE_LIMIT)
            else:
                opening = asyncio.open_connection(host, port, limit=_LINE_LIMIT)
            reader, writer = await _within(timeout.connect, ConnectTimeout, "connecting", opening)
        except OSError as exc:
            raise ConnectError(f"cannot connect: {exc}") from None
        conn = _Conn(reader, writer)
        self._open.add(conn)
        return conn, False

    async def _answer(self, conn: _Conn, method: str, payload: bytes, timeout: Timeout) -> Response:
        got_bytes = False
        try:
            conn.writer.write(payload)
            await _within(timeout.read, HttpTimeout, "sending the request", conn.writer.drain())
            while True:
                status_line = await _within(
                    timeout.read, ReadTimeout, "waiting for the answer", conn.reader.readline()
                )
                if not status_line:
                    raise _unanswered()
                got_bytes = True
                status, version = _status(status_line)
                found = await self._head_fields(conn, timeout)
                if not 100 <= status < 200:
                    break
        except (OSError, asyncio.IncompleteReadError) as exc:
            self._forget(conn)
            if not got_bytes:
                raise _unanswered(f": {exc}") from None
            raise ProtocolError(f"the server broke the answer: {exc}") from None
        except (HttpError, ValueError, asyncio.LimitOverrunError) as exc:
            self._forget(conn)
            if isinstance(exc, HttpError):
                raise
            raise ProtocolError(f"not an HTTP answer: {exc}") from None
        closing = "close" in found.get("connection", "").lower()
        reusable = not closing and (
            version == "HTTP/1.1" or "keep-alive" in found.get("connection", "")
        )
        if method == "HEAD" or status in (204, 304):
            framing, length = "none", 0
        elif "chunked" in found.get("transfer-encoding", "").lower():
            framing, length = "chunked", 0
        elif "content-length" in found:
            try:
                length = int(found["content-length"].split(",")[0])
            except ValueError:
                self._forget(conn)
                raise ProtocolError("bad content-length") from None
            framing = "length" if length > 0 else "none"
        else:
            framing, length = "close", 0
        return Response(status, found, conn, self, timeout.read, framing, length, reusable)

    async def _head_fields(self, conn: _Conn, timeout: Timeout) -> dict[str, str]:
        found: dict[str, str] = {}
        for _ in range(_MAX_HEADERS):
            line = await _within(
                timeout.read, ReadTimeout, "reading the answer", conn.reader.readuntil(b"\n")
            )
            text = line.decode("latin-1").rstrip("\r\n")
            if not text:
                return found
            name, sep, value = text.partition(":")
            if not sep:
                raise ProtocolError(f"bad header line {text[:60]!r}")
            key, value = name.strip().lower(), value.strip()
            found[key] = f"{found[key]}, {value}" if key in found else value
        raise ProtocolError("too many header lines")


def _status(line: bytes) -> tuple[int, str]:
    version, _, rest = line.decode("latin-1").partition(" ")
    if not version.startswith("HTTP/1."):
        raise ProtocolError(f"not an HTTP/1 answer: {line[:60]!r}")
    try:
        return int(rest[:3]), version
    except ValueError:
        raise ProtocolError(f"bad status line {line[:60]!r}") from None


class _Unanswered(ProtocolError):
    """The connection ended before a single byte of the answer came."""


def _unanswered(detail: str = "") -> ProtocolError:
    return _Unanswered(f"the server closed the connection without answering{detail}")
