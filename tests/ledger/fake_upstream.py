"""A local OpenAI-compatible provider whose behaviour is picked by the model name.

``ok`` answers (streaming too, with usage when asked); ``rate-limited`` → 429;
``broken`` → 500; ``leaky`` → 400 quoting the key it was sent; ``hang`` never answers;
``slow-stream`` streams one chunk every 50 ms for 10 s; ``echo`` answers (plain or streamed)
with the authorization header it was sent; ``wild-usage`` reports negative and absurd token
counts; ``slow`` answers after 1 s; ``busy`` answers after 0.3 s and counts how many calls
it holds at once (``most_at_once``). ``ok`` honours ``n`` with one choice (and 7 completion
tokens) per completion.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


class FakeUpstream:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.slow_stream_closed = threading.Event()
        self.at_once = 0
        self.most_at_once = 0
        # What ``GET /props`` says, as llama.cpp's server does; None answers 404, as others do.
        self.total_slots: int | None = None
        self.props_asked = 0
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        self.auth_headers.append(request.headers.get("authorization", ""))
        model = body["model"]
        if model == "rate-limited":
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429)
        if model == "leaky":
            # Some providers quote the key they were given in their error messages.
            msg = f"invalid key {request.headers.get('authorization', '')}"
            return JSONResponse({"error": {"message": msg}}, status_code=400)
        if model == "broken":
            return JSONResponse({"error": {"message": "boom"}}, status_code=500)
        if model == "hang":
            await asyncio.sleep(3600)
        if model == "slow":
            await asyncio.sleep(1.0)
        if model == "busy":
            self.at_once += 1
            self.most_at_once = max(self.most_at_once, self.at_once)
            try:
                await asyncio.sleep(0.3)
            finally:
                self.at_once -= 1
        if model == "slow-stream":
            return StreamingResponse(self._slow(), media_type="text/event-stream")
        text = "fake reply"
        n = body.get("n") if isinstance(body.get("n"), int) else 1
        usage = {"prompt_tokens": 11, "completion_tokens": 7 * n, "total_tokens": 11 + 7 * n}
        if model in ("echo", "echo-split"):
            # An upstream (or a proxy in front of one) that quotes the request's credential.
            text = f"you sent {request.headers.get('authorization', '')} to me"
        if model == "wild-usage":
            usage = {"prompt_tokens": -(10**6), "completion_tokens": 10**40, "total_tokens": 0}
        if body.get("stream"):
            return StreamingResponse(self._fast(body, text, usage), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [
                    {
                        "index": i,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                    for i in range(n)
                ],
                "usage": usage,
            }
        )

    @staticmethod
    def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        obj = {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(obj).encode() + b"\n\n"

    async def _fast(self, body: dict[str, Any], text: str, usage: dict[str, int]):
        yield self._chunk({"role": "assistant", "content": ""})
        if body["model"] == "echo-split":
            # A few characters a chunk, as a model streams tokens: the key spans many chunks.
            for i in range(0, len(text), 3):
                yield self._chunk({"content": text[i : i + 3]})
        else:
            for word in text.split(" "):
                yield self._chunk({"content": word + " "})
        yield self._chunk({}, "stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            obj = {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": usage}
            yield b"data: " + json.dumps(obj).encode() + b"\n\n"
        yield b"data: [DONE]\n\n"

    async def _slow(self):
        try:
            yield self._chunk({"role": "assistant", "content": ""})
            for i in range(200):
                await asyncio.sleep(0.05)
                yield self._chunk({"content": f"w{i} "})
            yield b"data: [DONE]\n\n"
        finally:
            self.slow_stream_closed.set()

    async def _props(self, request: Request) -> Response:
        self.props_asked += 1
        if self.total_slots is None:
            return Response(status_code=404)
        return JSONResponse({"total_slots": self.total_slots})

    def start(self) -> FakeUpstream:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/props", self._props, methods=["GET"]),
            ]
        )
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        server = self._server
        self._thread = threading.Thread(
            target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake upstream did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._server.force_exit = True
        if self._thread is not None:
            self._thread.join(10)
