"""A scripted model provider speaking the OpenAI Chat Completions wire format over HTTP.

It answers each request with the next scripted item and records every request body, so tests
can assert exactly what the runtime sent. Served by uvicorn on a Unix socket (and TCP).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


@dataclass
class Fail:
    status: int
    message: str = "failure"
    code: str | None = None
    retryable: bool | None = None


Item = dict[str, Any] | Fail | Callable[[dict[str, Any]], "dict[str, Any] | Fail"]


def call(name: str, arguments: Any, id_: str | None = None) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": id_ or f"call_{name}_{abs(hash(args)) % 10_000}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def reply(
    content: str = "", tool_calls: list[dict[str, Any]] | None = None, prompt_tokens: int = 100
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 10, "total_tokens": 110},
    }


@dataclass
class ScriptedProvider:
    script: list[Item] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str] = field(default_factory=list)
    exhausted: str = "(script exhausted)"

    def app(self) -> Starlette:
        async def completions(request: Request) -> JSONResponse:
            body = await request.json()
            self.requests.append(body)
            self.auth.append(request.headers.get("authorization", ""))
            item: Item = self.script.pop(0) if self.script else reply(self.exhausted)
            if callable(item):
                item = item(body)
            if isinstance(item, Fail):
                error: dict[str, Any] = {"message": item.message, "type": "error"}
                if item.code:
                    error["code"] = item.code
                if item.retryable is not None:
                    error["retryable"] = item.retryable
                return JSONResponse({"error": error}, status_code=item.status)
            return JSONResponse(item)

        return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])


@contextlib.asynccontextmanager
async def serve(
    app: Any,
    *,
    uds: Path | None = None,
    port: int = 0,
    lifespan: Literal["auto", "on", "off"] = "off",
) -> AsyncIterator[Any]:
    """Run an ASGI app with uvicorn inside the test's event loop."""
    config = uvicorn.Config(
        app, uds=str(uds) if uds else None, port=port, log_level="warning", lifespan=lifespan
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    for _ in range(500):
        if server.started:
            break
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield server
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)
