"""An ASGI guard that refuses an oversized request body before Django reads it.

Django refuses a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` only once its ASGI handler
has read all of it into a temporary file, so a 50 MB upload costs 50 MB of disk before
the 413. Here a declared ``Content-Length`` over the limit is answered at once, and a
streamed body that grows past it is cut off (the app sees the client go away) and
answered the same way.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]  # Django's handler types its scope as a dict


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


class BodyLimit:
    def __init__(self, app: ASGIApp, limit: Callable[[], int]) -> None:
        self.app = app
        self.limit = limit

    async def _refuse(self, send: Send, limit: int) -> None:
        body = json.dumps({"error": f"the request body is larger than {limit} bytes"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit()
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await self._refuse(send, limit)
            return
        seen = 0
        cut = False
        started = False

        async def counted() -> Message:
            nonlocal seen, cut
            if cut:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    cut = True
                    return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, counted, watched)
        if cut and not started:
            await self._refuse(send, limit)
