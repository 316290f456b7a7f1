"""The gateway's ASGI app: ``POST /v1/chat/completions`` and ``GET /v1/models``.

Served outside Django's request stack (this is every agent's hot path). Each call is:
authenticate (memory, else one lookup) → reserve the worst case (one UPDATE) → forward →
settle the real cost (one transaction). Database work runs on a small thread pool, except
a reservation on SQLite, which runs on the event loop when the file is free
(``ledger.gateway.inline``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

import anyio
from django.conf import settings
from django.db import DataError, IntegrityError, connections
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ledger.gateway import litellm_backend, passthrough, replay_backend, scripted_backend
from ledger.gateway import request as checks
from ledger.gateway.auth import KeyCache, KeyInfo
from ledger.gateway.books import Books
from ledger.gateway.call import SSE_DONE, Call, Usage
from ledger.gateway.errors import (
    GatewayError,
    bad_request,
    budget_exceeded,
    concluded,
    credential_mismatch,
    too_large,
    unauthorized,
)
from ledger.gateway.inline import InlineReservations
from ledger.gateway.local_queue import UpstreamQueues, held_while_streaming
from ledger.gateway.record import Recorder, now_ms
from ledger.gateway.routes import Routes
from ledger.gateway.upstream_http import UpstreamClient
from ledger.local_server import slots_for
from ledger.pricing import cost_nusd, to_usd
from ledger.services import spend
from ledger.tokens import count_messages, estimate_prompt_tokens

log = logging.getLogger("ledger.gateway")

# No single call may hold more than a million dollars: far past any real call, and far
# below where the reservation's 64-bit sums could overflow.
MAX_RESERVATION_NUSD = 10**15

P = ParamSpec("P")
T = TypeVar("T")

_REFUSALS: dict[spend.Refusal, Callable[[], GatewayError]] = {
    spend.Refusal.UNKNOWN_KEY: lambda: unauthorized("unknown API key"),
    spend.Refusal.REVOKED: lambda: unauthorized("this API key was revoked"),
    spend.Refusal.CONCLUDED: lambda: concluded("the realm of this key has concluded"),
    spend.Refusal.EXHAUSTED: lambda: budget_exceeded(
        "budget exhausted: this call could cost more than what is left of the cap",
        retryable=False,
    ),
    spend.Refusal.BUSY: lambda: budget_exceeded(
        "the rest of the budget is held by calls in flight; retry when they finish",
        retryable=True,
    ),
}


class Gateway:
    """State shared by all requests of one gateway process."""

    def __init__(
        self,
        *,
        upstream_timeout: float | None = None,
        db_threads: int | None = None,
        max_body_bytes: int | None = None,
    ):
        self.timeout = upstream_timeout or float(settings.BEARPIT_GATEWAY_UPSTREAM_TIMEOUT)
        self.default_max_tokens = int(settings.BEARPIT_GATEWAY_DEFAULT_MAX_TOKENS)
        self.max_body = max_body_bytes or int(settings.BEARPIT_GATEWAY_MAX_BODY_BYTES)
        # SQLite has one writer at a time, and its busy handler sleeps (in steps up to
        # 100 ms) while another connection holds the lock: one reservation thread (and the
        # one settlement thread) keep that rare; the books batch the writes anyway, and
        # most reservations never reach the thread (``self.inline``).
        sqlite = connections["default"].vendor == "sqlite"
        self.threads = db_threads or (1 if sqlite else int(settings.BEARPIT_GATEWAY_DB_THREADS))
        self.keys = KeyCache()
        self.pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ledger-db")
        # Settlements get their own thread, so writing them (and the Chronicle's pushes
        # after commit) never delays a reservation.
        self.settle_pool = ThreadPoolExecutor(1, thread_name_prefix="ledger-settle")
        # A call is recorded before it is settled, and the books wait for the recorder
        # before each round: a settled call is a recorded one (see Recorder.written).
        self.recorder = Recorder()
        self.inline = InlineReservations.for_database()
        self.books = Books(
            self._in_pool,
            self._in_settle_pool,
            before_settling=self.recorder.written,
            hold_now=self.inline.hold if self.inline is not None else None,
        )
        self.session = passthrough.new_session()
        self.upstream = UpstreamClient()
        self.queues = UpstreamQueues(slots_for(None), self.session)
        self.replayer = replay_backend.Replayer()

    async def _in_pool(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn)

    async def _in_settle_pool(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.settle_pool, fn)

    async def db(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.pool, lambda: fn(*args, **kwargs))

    async def aclose(self) -> None:
        """Finish writing settlements, then let go of connections and threads."""
        await self.books.aclose()
        if self.inline is not None:
            self.inline.close()
        await self.session.close()
        await self.upstream.close()
        self.recorder.hand_over()
        await asyncio.get_running_loop().run_in_executor(None, self.recorder.close)
        # Close each worker thread's database connection in that thread.
        barrier = threading.Barrier(self.threads)

        def close() -> None:
            with contextlib.suppress(threading.BrokenBarrierError):
                barrier.wait(timeout=5)
            connections.close_all()

        loop = asyncio.get_running_loop()
        await asyncio.gather(*(loop.run_in_executor(self.pool, close) for _ in range(self.threads)))
        await loop.run_in_executor(self.settle_pool, connections.close_all)
        self.pool.shutdown(wait=True)
        self.settle_pool.shutdown(wait=True)

    async def authenticate(self, request: Request) -> KeyInfo:
        header = request.headers.get("authorization", "")
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise unauthorized("missing bearer API key")
        key_hash, info, hit = self.keys.cached(secret.strip())
        if not hit:
            info = await self.db(self.keys.load, key_hash)
        if info is None:
            raise unauthorized("unknown API key")
        if info.revoked == "concluded":
            raise concluded("the realm of this key has concluded")
        if info.revoked:
            raise unauthorized("this API key was revoked")
        return info

    def _declared_size(self, request: Request) -> None:
        """Refuse a body declared too large before reading a byte of it."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body:
            raise too_large(self.max_body)

    async def _read(self, request: Request) -> bytes:
        """The body, read no further than the limit (a chunked body declares no size)."""
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise too_large(self.max_body)
            chunks.append(chunk)
        return b"".join(chunks)

    def parse(self, key: KeyInfo, raw: bytes, bearer: str = "") -> Call:
        try:
            payload = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise bad_request(f"request body is not JSON: {reason}") from None
        shape = checks.check(
            payload,
            context_length=key.context_length,
            default_max_tokens=self.default_max_tokens,
        )
        return Call(
            key=key,
            payload=payload,
            messages=payload["messages"],
            max_tokens=shape.max_tokens,
            max_tokens_given=shape.max_tokens_given,
            stream=shape.stream,
            include_usage=shape.include_usage,
            prompt_tokens=0,
            timeout=self.timeout,
            n=shape.n,
            images=shape.images,
            bearer=bearer,
        )

    async def _reserve(self, call: Call, body_bytes: int) -> tuple[int, int]:
        """Reserve the worst case; raise the refusal as the client should see it."""
        estimate = estimate_prompt_tokens(body_bytes) + call.images * checks.IMAGE_TOKENS
        key = call.key
        amount = cost_nusd(estimate, call.n * call.max_tokens, key.input_price, key.output_price)
        if amount > MAX_RESERVATION_NUSD:
            raise bad_request(
                f"max_tokens: the call could cost {to_usd(amount):.2f} USD, more than one call "
                "may reserve; ask for fewer tokens or completions"
            )
        try:
            refusal = await self.books.reserve(key.id, key.realm_id, amount)
        except Exception as exc:
            log.exception("reserving for %s/%s failed", key.realm_id, key.agent_id)
            # A failure of this reservation alone (its row, its numbers) will fail again.
            retryable = not isinstance(exc, DataError | IntegrityError | OverflowError)
            raise GatewayError(
                503,
                "the ledger could not reserve budget for this call"
                + ("; try again" if retryable else ""),
                type_="api_error",
                code="ledger_unavailable",
                retryable=retryable,
            ) from exc
        if refusal is not None:
            raise _REFUSALS[refusal]()
        return amount, estimate

    async def settle(
        self, call: Call, usage: Usage, reserved: int, started: float, *, wait: bool
    ) -> None:
        """Meter the call once, whatever path ends it.

        The settlement joins the next round of the books; ``wait`` blocks until
        it is committed (streams before their last line, scripted calls whose next reply
        depends on it). The reservation holds the cap until then.
        """
        if usage.settled:
            return
        usage.settled = True
        key = call.key
        if usage.tokens_in is None or usage.tokens_out is None:
            if usage.outcome == "upstream_error" and usage.output_chunks == 0:
                tokens_in, tokens_out = 0, 0
            else:
                # No usage from the provider (it was cut short): bill the prompt as counted
                # and one token per content chunk relayed.
                tokens_in = (
                    usage.tokens_in
                    if usage.tokens_in is not None
                    else count_messages(call.messages, call.payload.get("tools"))
                )
                tokens_out = (
                    usage.tokens_out if usage.tokens_out is not None else usage.output_chunks
                )
        else:
            tokens_in, tokens_out = usage.tokens_in, usage.tokens_out
        cost = (
            0 if usage.free else cost_nusd(tokens_in, tokens_out, key.input_price, key.output_price)
        )
        if cost > reserved:
            log.warning(
                "call by %s/%s cost %d n$, more than the %d n$ reserved",
                key.realm_id,
                key.agent_id,
                cost,
                reserved,
            )
        item = spend.Settlement(
            key_id=key.id,
            reserved_nusd=reserved,
            cost_nusd=cost,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            latency_ms=int((time.monotonic() - started) * 1000),
            outcome=usage.outcome,
            model=key.model,
            streamed=call.stream,
            script_cursor=usage.cursor,
        )
        done = self.books.settle(item, urgent=wait)
        if wait:
            with anyio.CancelScope(shield=True):
                await done

    async def chat_completions(self, request: Request) -> Response:
        started, started_ms = time.monotonic(), now_ms()
        try:
            self._declared_size(request)
            key = await self.authenticate(request)
            if key.credential_problem:
                raise credential_mismatch(key.credential_problem)
            raw = await self._read(request)
            call = self.parse(key, raw, request.headers.get("authorization", "")[7:].strip())
            reserved, call.prompt_tokens = await self._reserve(call, len(raw))
        except GatewayError as exc:
            return exc.response()
        usage = Usage()
        try:
            replayed = None
            if key.replay is not None:
                replayed = await self.replayer.answer(self._in_pool, call)
            if call.stream:
                if replayed is not None:
                    replay_backend.check_status(replayed)
                    stream = replay_backend.stream(call, replayed, usage)
                else:
                    stream = await self._open_stream(call, usage)
                return StreamingResponse(
                    self._metered(stream, call, usage, reserved, started, started_ms),
                    media_type="text/event-stream",
                    headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
                )
            if replayed is not None:
                body = replay_backend.completion(call, replayed, usage)
            else:
                body = await self._complete(call, usage)
        except GatewayError as exc:
            usage.outcome = "upstream_error"
            self.recorder.record(
                call,
                usage,
                status=exc.status,
                body=json.dumps(exc.body()).encode(),
                started_ms=started_ms,
            )
            await self.settle(call, usage, reserved, started, wait=False)
            return exc.response()
        except BaseException:
            usage.outcome = "upstream_error"
            await self.settle(call, usage, reserved, started, wait=False)
            raise
        # The answer does not wait for the books, except where the next answer reads them.
        scripted = call.key.transport == "scripted"
        self.recorder.record(call, usage, status=200, body=body, started_ms=started_ms)
        await self.settle(call, usage, reserved, started, wait=scripted)
        return Response(body, media_type="application/json")

    async def _complete(self, call: Call, usage: Usage) -> bytes:
        queue = await self.queues.for_key(call.key)
        if queue is None:
            return await self._forward(call, usage)
        async with queue:
            return await self._forward(call, usage)

    async def _forward(self, call: Call, usage: Usage) -> bytes:
        transport = call.key.transport
        if transport == "scripted":
            reply, prompt = await self.db(scripted_backend.compute_reply, call)
            data = scripted_backend.completion(call, reply, prompt, usage)
            return json.dumps(data).encode()
        if transport == "openai":
            return await passthrough.complete(self.upstream, call, usage)
        return await litellm_backend.complete(call, usage)

    async def _open_stream(self, call: Call, usage: Usage) -> AsyncIterator[bytes]:
        queue = await self.queues.for_key(call.key)
        if queue is None:
            return await self._open_upstream(call, usage)
        await queue.acquire()
        try:
            stream = await self._open_upstream(call, usage)
        except BaseException:
            queue.release()
            raise
        return held_while_streaming(queue, stream)

    async def _open_upstream(self, call: Call, usage: Usage) -> AsyncIterator[bytes]:
        transport = call.key.transport
        if transport == "scripted":
            reply, prompt = await self.db(scripted_backend.compute_reply, call)
            return scripted_backend.stream(call, reply, prompt, usage)
        if transport == "openai":
            return await passthrough.open_stream(self.session, call, usage)
        return await litellm_backend.open_stream(call, usage)

    async def _metered(
        self,
        stream: AsyncIterator[bytes],
        call: Call,
        usage: Usage,
        reserved: int,
        started: float,
        started_ms: int,
    ) -> AsyncIterator[bytes]:
        usage.outcome = "disconnected"
        finished = recorded = False
        relayed: list[bytes] = []
        try:
            async for chunk in stream:
                relayed.append(chunk)
                if chunk == SSE_DONE:
                    # Settle before the client hears the end, so spend is on record by then.
                    if usage.outcome == "disconnected":
                        usage.outcome = "ok"
                    recorded = True
                    self.recorder.record(
                        call, usage, status=200, chunks=relayed, started_ms=started_ms
                    )
                    await self.settle(call, usage, reserved, started, wait=True)
                yield chunk
            finished = True
        finally:
            if finished and usage.outcome == "disconnected":
                usage.outcome = "ok"
            if not recorded:
                self.recorder.record(call, usage, status=200, chunks=relayed, started_ms=started_ms)
            aclose = getattr(stream, "aclose", None)
            with anyio.CancelScope(shield=True):
                if aclose is not None:
                    await aclose()
                await self.settle(
                    call, usage, reserved, started, wait=call.key.transport == "scripted"
                )

    async def models(self, request: Request) -> Response:
        try:
            key = await self.authenticate(request)
        except GatewayError as exc:
            return exc.response()
        return JSONResponse(
            {
                "object": "list",
                "data": [
                    {"id": key.model, "object": "model", "created": 0, "owned_by": key.provider}
                ],
            }
        )


async def _health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def build_app(gateway: Gateway) -> Routes:
    return Routes(
        {
            ("POST", "/v1/chat/completions"): gateway.chat_completions,
            ("POST", "/chat/completions"): gateway.chat_completions,
            ("GET", "/v1/models"): gateway.models,
            ("GET", "/health"): _health,
        }
    )
