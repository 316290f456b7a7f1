"""The three Matrix client-server calls an agent makes: sync, join, send.

A thin layer over the runtime's HTTP client (TCP or the homeserver's Unix socket). Every call
returns the parsed answer or raises :class:`MatrixError` with the homeserver's ``errcode`` and
message, or with the transport's complaint when the homeserver could not be reached, so callers
retry one way.
"""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

from runtime import http

_API = "/_matrix/client/v3"


class MatrixError(Exception):
    """A Matrix call failed; ``status`` is None when the homeserver was not reached."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def new_txn_id() -> str:
    """A transaction id: 128 random bits, as uuid4 would give, without loading uuid (and
    platform, libuuid) into the agent's process."""
    return os.urandom(16).hex()


class MatrixClient:
    def __init__(
        self,
        homeserver_url: str,
        access_token: str,
        socket_path: str | None = None,
        request_timeout_s: float = 60.0,
    ) -> None:
        self._http = http.client(
            homeserver_url.rstrip("/"),
            socket_path=socket_path,
            headers={"Authorization": f"Bearer {access_token}"},
            timeout=http.Timeout(request_timeout_s, connect=10.0),
        )
        self._timeout_s = request_timeout_s

    async def close(self) -> None:
        await self._http.aclose()

    async def sync(
        self, sync_filter: dict[str, Any], since: str | None, timeout_ms: int
    ) -> dict[str, Any]:
        params: dict[str, str] = {
            "filter": json.dumps(sync_filter, separators=(",", ":")),
            "timeout": str(timeout_ms),
            "full_state": "false",
        }
        if since:
            params["since"] = since
        # The long poll must not be cut by the client before the homeserver answers it.
        timeout = http.Timeout(self._timeout_s + timeout_ms / 1000, connect=10.0)
        return await self._call("GET", "/sync", params=params, timeout=timeout)

    async def join(self, room_id: str) -> None:
        await self._call("POST", f"/join/{quote(room_id, safe='')}", json={})

    async def send(
        self, room_id: str, event_type: str, content: dict[str, Any], txn_id: str | None = None
    ) -> str:
        """Post an event; retrying with the same ``txn_id`` makes it land only once."""
        txn = txn_id or new_txn_id()
        path = f"/rooms/{quote(room_id, safe='')}/send/{quote(event_type, safe='')}/{txn}"
        answer = await self._call("PUT", path, json=content)
        return str(answer.get("event_id", ""))

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: dict[str, Any] | None = None,
        timeout: http.Timeout | None = None,
    ) -> dict[str, Any]:
        try:
            response = await self._http.request(
                method,
                _API + path,
                params=params,
                json=json,
                timeout=timeout,
            )
        except http.HttpError as exc:
            raise MatrixError(f"{type(exc).__name__}: {exc}") from None
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if response.status_code >= 400:
            if isinstance(payload, dict):
                problem = f"{payload.get('errcode', '')} {payload.get('error', '')}".strip()
            else:
                problem = response.text[:200]
            raise MatrixError(f"HTTP {response.status_code}: {problem}", response.status_code)
        if not isinstance(payload, dict):
            raise MatrixError(f"HTTP {response.status_code}: not a JSON object", 200)
        return payload
