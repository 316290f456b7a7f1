"""``https://`` targets: the runtime's client interface over httpx, imported only for them.

The platform's own peers are plain ``http://`` (runtime/http.py); a model endpoint or an MCP
server reached over TLS gets httpx's full certificate checks. httpx's errors are raised as the
runtime's own (runtime.http_types), so callers handle one set whichever client they hold.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Self

import httpx

from runtime.http_types import (
    ConnectError,
    ConnectTimeout,
    HttpError,
    HttpTimeout,
    ProtocolError,
    ReadTimeout,
    Timeout,
)


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except httpx.ConnectTimeout as exc:
        raise ConnectTimeout(f"timed out connecting: {exc}") from None
    except httpx.ReadTimeout as exc:
        raise ReadTimeout(f"timed out reading the answer: {exc}") from None
    except httpx.TimeoutException as exc:
        raise HttpTimeout(f"timed out: {exc}") from None
    except httpx.ConnectError as exc:
        raise ConnectError(f"cannot connect: {exc}") from None
    except httpx.RemoteProtocolError as exc:
        raise ProtocolError(str(exc)) from None
    except httpx.HTTPError as exc:
        raise HttpError(f"{type(exc).__name__}: {exc}") from None


def _timeout(value: Timeout) -> httpx.Timeout:
    return httpx.Timeout(value.read, connect=value.connect)


class _Answer:
    """An httpx response whose transport errors come out as the runtime's."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    @property
    def status_code(self) -> int:
        return self._response.status_code

    @property
    def headers(self) -> Mapping[str, str]:
        return self._response.headers

    @property
    def content(self) -> bytes:
        return self._response.content

    @property
    def text(self) -> str:
        return self._response.text

    def json(self) -> Any:
        return self._response.json()

    async def aread(self) -> bytes:
        with _translated():
            return await self._response.aread()

    async def aiter_lines(self) -> AsyncIterator[str]:
        with _translated():
            async for line in self._response.aiter_lines():
                yield line


class _Streamed:
    def __init__(self, opening: Any) -> None:
        self._opening = opening
        self._response: httpx.Response | None = None

    async def __aenter__(self) -> _Answer:
        with _translated():
            self._response = await self._opening.__aenter__()
        return _Answer(self._response)

    async def __aexit__(self, *exc: object) -> None:
        with _translated():
            await self._opening.__aexit__(None, None, None)


class TlsClient:
    def __init__(
        self,
        base_url: str,
        *,
        socket_path: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout,
        follow_redirects: bool = False,
    ) -> None:
        transport = httpx.AsyncHTTPTransport(uds=socket_path) if socket_path else None
        self._http = httpx.AsyncClient(
            base_url=base_url,
            transport=transport,
            headers=dict(headers or {}),
            timeout=_timeout(timeout),
            follow_redirects=follow_redirects,
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> _Answer:
        with _translated():
            response = await self._http.request(
                method,
                url,
                params=params,
                json=json,
                headers=headers,
                timeout=_timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
            )
        return _Answer(response)

    def stream(
        self,
        method: str,
        url: str,
        *,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: Timeout | None = None,
    ) -> _Streamed:
        return _Streamed(
            self._http.stream(
                method,
                url,
                json=json,
                headers=headers,
                timeout=_timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
            )
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
