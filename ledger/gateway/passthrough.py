"""Forwarding to OpenAI-compatible upstreams as they are, with httpx.

The request body goes through nearly untouched (the model is the key's, a max-tokens
bound is added when missing, usage is requested on streams) and the upstream's bytes come
back unparsed, except for the stream lines that carry usage.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx

from ledger.gateway.call import SSE_DONE, Call, Usage
from ledger.gateway.errors import (
    GatewayError,
    from_upstream_status,
    upstream_timeout,
    upstream_unreachable,
)


def _scrub(text: str, secret: str | None) -> str:
    text = text[:500]
    return text.replace(secret, "***") if secret else text


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


def _raise_transport(exc: httpx.HTTPError) -> GatewayError:
    if isinstance(exc, httpx.TimeoutException):
        return upstream_timeout()
    return upstream_unreachable(type(exc).__name__)


async def complete(client: httpx.AsyncClient, call: Call, usage: Usage) -> bytes:
    url, headers, body = _request(call)
    try:
        resp = await client.post(url, json=body, headers=headers, timeout=call.timeout)
    except httpx.HTTPError as exc:
        raise _raise_transport(exc) from exc
    if resp.status_code >= 400:
        raise from_upstream_status(resp.status_code, _detail(resp.content, call.key.upstream_key))
    try:
        data = resp.json()
    except ValueError as exc:
        raise upstream_unreachable("the provider's answer was not JSON") from exc
    usage.take(data.get("usage") if isinstance(data, dict) else None)
    return resp.content


async def open_stream(client: httpx.AsyncClient, call: Call, usage: Usage) -> AsyncIterator[bytes]:
    """Connect and check the status first, so failures still become JSON errors."""
    url, headers, body = _request(call)
    request = client.build_request("POST", url, json=body, headers=headers, timeout=call.timeout)
    try:
        resp = await client.send(request, stream=True)
    except httpx.HTTPError as exc:
        raise _raise_transport(exc) from exc
    if resp.status_code >= 400:
        try:
            content = await resp.aread()
        except httpx.HTTPError:
            content = b""
        finally:
            await resp.aclose()
        raise from_upstream_status(resp.status_code, _detail(content, call.key.upstream_key))
    return _relay(resp, call, usage)


async def _relay(resp: httpx.Response, call: Call, usage: Usage) -> AsyncIterator[bytes]:
    try:
        async for line in resp.aiter_lines():
            if not line:
                continue
            if not line.startswith("data:"):
                yield line.encode() + b"\n\n"
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                yield SSE_DONE
                continue
            if '"usage"' in data:
                try:
                    obj = json.loads(data)
                except ValueError:
                    obj = None
                if isinstance(obj, dict) and obj.get("usage"):
                    usage.take(obj["usage"])
                    if not call.include_usage and not obj.get("choices"):
                        continue  # the client did not ask for the usage chunk
            usage.output_chunks += 1
            yield b"data: " + data.encode() + b"\n\n"
    except httpx.TimeoutException:
        usage.outcome = "upstream_error"
    except httpx.HTTPError:
        usage.outcome = "upstream_error"
    finally:
        await resp.aclose()
