"""The gateway's ASGI entry: a fixed table of routes, looked up in one dict.

Every model call of every agent passes here, so there is no middleware stack and no
pattern matching: the paths are exact. What a handler raises unexpectedly reaches the
server, which logs it and answers 500 (the handlers answer every error they expect).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

Handler = Callable[[Request], Awaitable[Response]]


def _error(status: int, message: str, **headers: str) -> Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": None}}
    return Response(
        json.dumps(body).encode(), status, headers=headers, media_type="application/json"
    )


class Routes:
    """``{(method, path): handler}`` as an ASGI app; other paths 404, other methods 405."""

    def __init__(self, table: Mapping[tuple[str, str], Handler]) -> None:
        self._table = dict(table)
        self._methods: dict[str, list[str]] = {}
        for method, path in self._table:
            self._methods.setdefault(path, []).append(method)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return  # no websockets and no lifespan here
        path, method = scope["path"], scope["method"]
        handler = self._table.get((method, path))
        if handler is None and method == "HEAD":
            handler = self._table.get(("GET", path))
        if handler is not None:
            response = await handler(Request(scope, receive))
        elif path in self._methods:
            allowed = ", ".join(sorted(self._methods[path]))
            response = _error(405, f"{method} is not allowed here", allow=allowed)
        else:
            response = _error(404, f"no route {path}")
        await response(scope, receive, send)
