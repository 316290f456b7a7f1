"""The runtime's HTTP errors, timeouts and client interface, shared by both clients.

runtime/http.py (plain HTTP) and runtime/http_tls.py (httpx, for ``https://``) both implement
:class:`Client` and raise these errors, so callers handle one set whichever client they hold.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, Self


class HttpError(Exception):
    """The exchange failed below HTTP: nothing reached, a timeout, a broken answer."""


class ConnectError(HttpError):
    """Nothing accepted the connection (refused, no such socket, unknown host)."""


class HttpTimeout(HttpError):
    """A connect, read or write took longer than its timeout."""


class ConnectTimeout(HttpTimeout):
    """The connection was not accepted in time."""


class ReadTimeout(HttpTimeout):
    """The answer (or the next part of it) did not come in time."""


class ProtocolError(HttpError):
    """The server broke the exchange: it closed mid-answer, or the answer is not HTTP."""


@dataclass(frozen=True)
class Timeout:
    """Seconds allowed to connect, and for each read or write; None waits for ever."""

    read: float | None
    connect: float | None = 10.0


class Answer(Protocol):
    """What callers use of a response; httpx's Response has the same shape."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def content(self) -> bytes: ...
    @property
    def text(self) -> str: ...
    def json(self) -> Any: ...
    async def aread(self) -> bytes: ...
    def aiter_lines(self) -> AsyncIterator[str]: ...


class Streamed(Protocol):
    async def __aenter__(self) -> Answer: ...
    async def __aexit__(self, *exc: object) -> None: ...


class Client(Protocol):
    """The calls the runtime makes; both this module's client and the TLS one offer them."""

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> Answer: ...
    def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> Streamed: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(self, *exc: object) -> None: ...
