"""Forwarding to OpenAI-compatible upstreams as they are.

The request body goes through nearly untouched (it passed the gateway's allow-list; the
model is the key's, a max-tokens bound is added when missing, usage is requested on
streams) and the upstream's bytes come back as they are, except for the stream lines that
carry usage and any occurrence of the provider key, which is scrubbed from every body.
A non-streamed call (every agent's) goes through the gateway's own lean client
(``upstream_http``); a stream through aiohttp, whose C parser made a round trip about a
millisecond cheaper than httpx.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from ledger.gateway.call import SSE_DONE, Call, Usage, sse
from ledger.gateway.errors import (
    GatewayError,
    from_upstream_status,
    upstream_timeout,
    upstream_unreachable,
)
from ledger.gateway.scrub import StreamScrubber, scrub_bytes, scrub_text
from ledger.gateway.upstream_http import UpstreamClient, UpstreamProtocolError
from ledger.tokens import count_text

USER_AGENT = "bearpit-gateway"


def _scrub(text: str, secret: str | None) -> str:
    # Scrub before cutting, so that no cut leaves a piece of the key behind.
    return scrub_text(text, secret)[:500]


def _reply_tokens(data: dict[str, Any]) -> int:
    """The completion's tokens as counted here, for a provider that reported none."""
    total = 0
    for choice in data.get("choices") or ():
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("content"), str):
            total += count_text(message["content"])
        for tool_call in message.get("tool_calls") or ():
            fn = tool_call.get("function") if isinstance(tool_call, dict) else None
            if isinstance(fn, dict):
                total += count_text(str(fn.get("name", ""))) + count_text(
                    str(fn.get("arguments", ""))
                )
    return total


def _detail(body: bytes, secret: str | None) -> str:
    try:
        data = json.loads(body)
        msg = data.get("error", {}).get("message") if isinstance(data, dict) else None
        if isinstance(msg, str):
            return _scrub(msg, secret)
    except (ValueError, AttributeError):
        pass
    return _scrub(body.decode("utf-8", "replace"), secret)


def _request(call: Call) -> tuple[str, dict[str, str], dict[str, Any]]:
    key = call.key
    body = dict(call.payload)
    body["model"] = key.model
    if not call.max_tokens_given:
        # Newer OpenAI models refuse max_tokens; other servers only know max_tokens.
        field = "max_completion_tokens" if key.provider in ("openai", "azure") else "max_tokens"
        body[field] = call.max_tokens
    if key.effort and "reasoning_effort" not in body:
        body["reasoning_effort"] = key.effort
    if call.stream:
        body["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
    headers = {"content-type": "application/json"}
    if key.upstream_key:
        headers["authorization"] = f"Bearer {key.upstream_key}"
    return key.api_base.rstrip("/") + "/chat/completions", headers, body


def _transport_error(exc: BaseException) -> GatewayError:
    if isinstance(exc, asyncio.TimeoutError):
        return upstream_timeout()
    return upstream_unreachable(type(exc).__name__)


def new_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256, keepalive_timeout=30),
        auto_decompress=True,
    )


async def complete(client: UpstreamClient, call: Call, usage: Usage) -> bytes:
    url, headers, body = _request(call)
    headers = {**headers, "accept": "application/json", "user-agent": USER_AGENT}
    try:
        answer = await client.post(url, json.dumps(body).encode(), headers, timeout=call.timeout)
    except (TimeoutError, OSError, UpstreamProtocolError) as exc:
        raise _transport_error(exc) from exc
    status, content = answer.status, answer.body
    if status >= 400:
        raise from_upstream_status(status, _detail(content, call.key.upstream_key))
    try:
        data = json.loads(content)
    except ValueError as exc:
        raise upstream_unreachable("the provider's answer was not JSON") from exc
    if isinstance(data, dict):
        usage.take(data.get("usage"))
        if usage.tokens_out is None:
            usage.tokens_out = _reply_tokens(data)
    return scrub_bytes(content, call.key.upstream_key)


async def open_stream(
    session: aiohttp.ClientSession, call: Call, usage: Usage
) -> AsyncIterator[bytes]:
    """Connect and check the status first, so failures still become JSON errors."""
    url, headers, body = _request(call)
    try:
        # No total limit on a stream; the timeout applies to every wait for the next bytes.
        resp = await session.post(
            url,
            data=json.dumps(body).encode(),
            headers=headers,
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=call.timeout, sock_read=call.timeout
            ),
            allow_redirects=False,
        )
    except (TimeoutError, aiohttp.ClientError) as exc:
        raise _transport_error(exc) from exc
    if resp.status >= 400:
        try:
            content = await resp.read()
        except (TimeoutError, aiohttp.ClientError):
            content = b""
        finally:
            resp.close()
        raise from_upstream_status(resp.status, _detail(content, call.key.upstream_key))
    return _relay(resp, call, usage)


async def _relay(resp: aiohttp.ClientResponse, call: Call, usage: Usage) -> AsyncIterator[bytes]:
    secret = call.key.upstream_key
    # With a provider key in play every chunk is parsed, so a key spread over chunks is
    # caught too; the keyless upstreams (local servers) keep the cheaper path.
    scrubber = StreamScrubber(secret) if secret else None
    try:
        async for raw in resp.content:
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            line = scrub_text(line, secret)
            if not line.startswith("data:"):
                yield line.encode() + b"\n\n"
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                if scrubber is not None and (rest := scrubber.rest()) is not None:
                    yield sse(rest)
                yield SSE_DONE
                continue
            obj: Any = None
            if scrubber is not None or '"usage"' in data:
                try:
                    obj = json.loads(data)
                except ValueError:
                    obj = None
            if isinstance(obj, dict) and obj.get("usage"):
                usage.take(obj["usage"])
                if not call.include_usage and not obj.get("choices"):
                    continue  # the client did not ask for the usage chunk
            usage.output_chunks += 1
            if scrubber is not None and isinstance(obj, dict):
                yield sse(scrubber.chunk(obj))
                continue
            yield b"data: " + data.encode() + b"\n\n"
        if scrubber is not None and (rest := scrubber.rest()) is not None:
            yield sse(rest)
    except (TimeoutError, aiohttp.ClientError):
        usage.outcome = "upstream_error"
    finally:
        # close, not release: when our client went away this stops the provider generating.
        resp.close()
