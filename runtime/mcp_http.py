"""The MCP wire protocol the runtime needs: JSON-RPC over streamable HTTP, nothing more.

One :class:`McpSession` speaks to one server through an HTTP client (runtime.http) the caller owns
(bearer header, Unix socket transport). Every request is its own POST whose answer is either a
JSON body or a server-sent-event stream; notifications that ride on such a stream (or on the
optional GET stream of a stateful server) go to ``on_notification``. Requests the server makes
of the client (sampling, roots, elicitation) are declined: an agent offers none of them.

It is hand-written rather than the SDK's client because the SDK pulls its whole server side
into every agent process at import, which was most of an agent's start-up time and memory.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from runtime import __version__, http

PROTOCOL_VERSION = "2025-06-18"
METHOD_NOT_FOUND = -32601
_ACCEPT = "application/json, text/event-stream"

Notification = Callable[[dict[str, Any]], None]


class McpRemoteError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class McpTransportError(Exception):
    """The exchange itself failed: refused, an HTTP error, an expired session, a cut stream."""


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


def _error_text(status: int, body: bytes) -> str:
    text = body.decode("utf-8", "replace")[:300]
    try:
        payload = json.loads(text)
    except json.JSONDecodeError:
        return f"HTTP {status}: {text}"
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return f"HTTP {status}: {payload['error'].get('message', text)}"
    return f"HTTP {status}: {text}"


async def _sse_messages(response: http.Answer) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC messages of a server-sent-event stream, one per ``data`` block."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            text, data = "\n".join(data), []
            try:
                message = json.loads(text)
            except json.JSONDecodeError:
                continue  # a keep-alive or a foreign event: nothing to act on
            if isinstance(message, dict):
                yield message


class McpSession:
    """An initialised session with one MCP server."""

    def __init__(self, client: http.Client, url: str, on_notification: Notification) -> None:
        self._http = client
        self._url = url
        self._on_notification = on_notification
        self._ids = itertools.count(1)
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": _ACCEPT, "Content-Type": "application/json"}
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.protocol_version:
            headers["mcp-protocol-version"] = self.protocol_version
        return headers

    async def initialize(self) -> None:
        result = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "bearpit-runtime", "version": __version__},
            },
        )
        self.protocol_version = str(result.get("protocolVersion") or PROTOCOL_VERSION)
        await self.notify("notifications/initialized")

    async def list_tools(self) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor: str | None = None
        while True:
            result = await self.request("tools/list", {"cursor": cursor} if cursor else {})
            for raw in result.get("tools") or []:
                if isinstance(raw, dict) and isinstance(raw.get("name"), str):
                    schema = raw.get("inputSchema")
                    tools.append(
                        McpTool(
                            name=raw["name"],
                            description=str(raw.get("description") or ""),
                            input_schema=schema if isinstance(schema, dict) else {},
                        )
                    )
            cursor = result.get("nextCursor")
            if not cursor:
                return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await self.request("tools/call", {"name": name, "arguments": arguments})

    async def ping(self) -> None:
        await self.request("ping")

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._post_only(message)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return its ``result``; raise on an error answer."""
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        try:
            async with self._http.stream(
                "POST", self._url, json=message, headers=self._headers()
            ) as response:
                await self._check(response)
                if method == "initialize":
                    self.session_id = response.headers.get("mcp-session-id")
                kind = response.headers.get("content-type", "")
                if kind.startswith("text/event-stream"):
                    async for incoming in _sse_messages(response):
                        answer = await self._route(incoming, request_id)
                        if answer is not None:
                            return answer
                    raise McpTransportError(f"{method}: the stream ended without an answer")
                body = json.loads(await response.aread())
        except http.HttpError as exc:
            raise McpTransportError(f"{type(exc).__name__}: {exc}") from None
        except json.JSONDecodeError as exc:
            raise McpTransportError(f"{method}: malformed answer: {exc}") from None
        for incoming in body if isinstance(body, list) else [body]:
            if isinstance(incoming, dict):
                answer = await self._route(incoming, request_id)
                if answer is not None:
                    return answer
        raise McpTransportError(f"{method}: no answer to request {request_id}")

    async def listen(self) -> None:
        """Follow a stateful server's GET stream until it ends; servers without one return."""
        if not self.session_id:
            return
        try:
            async with self._http.stream(
                "GET", self._url, headers=self._headers(), timeout=http.Timeout(None, connect=10)
            ) as response:
                if response.status_code == 405:
                    return
                await self._check(response)
                async for incoming in _sse_messages(response):
                    await self._route(incoming, None)
        except http.HttpError as exc:
            raise McpTransportError(f"{type(exc).__name__}: {exc}") from None
        raise McpTransportError("the server closed its event stream")

    async def close(self) -> None:
        if self.session_id:
            # The session dies with the server anyway if this does not get through.
            with contextlib.suppress(http.HttpError):
                await self._http.request("DELETE", self._url, headers=self._headers())

    async def _check(self, response: http.Answer) -> None:
        if response.status_code == 404 and self.session_id:
            raise McpTransportError("the server forgot the session (404)")
        if response.status_code >= 400:
            raise McpTransportError(_error_text(response.status_code, await response.aread()))

    async def _post_only(self, message: dict[str, Any]) -> None:
        try:
            response = await self._http.request(
                "POST", self._url, json=message, headers=self._headers()
            )
        except http.HttpError as exc:
            raise McpTransportError(f"{type(exc).__name__}: {exc}") from None
        await self._check(response)

    async def _route(
        self, message: dict[str, Any], waiting_for: int | None
    ) -> dict[str, Any] | None:
        """Hand on a notification, decline a server request, or return the awaited result."""
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                await self._post_only(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": METHOD_NOT_FOUND, "message": f"{method} not offered"},
                    }
                )
            else:
                self._on_notification(message)
            return None
        if waiting_for is None or message.get("id") != waiting_for:
            return None
        error = message.get("error")
        if isinstance(error, dict):
            raise McpRemoteError(int(error.get("code") or 0), str(error.get("message") or ""))
        result = message.get("result")
        return result if isinstance(result, dict) else {}
