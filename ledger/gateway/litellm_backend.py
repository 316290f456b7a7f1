"""Provider translation through the LiteLLM SDK (Anthropic, Azure, and the rest).

LiteLLM is imported on first use only: it takes seconds and a few hundred megabytes, and
OpenAI-compatible upstreams and the scripted provider never need it.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from ledger.gateway.call import SSE_DONE, Call, Usage, sse
from ledger.gateway.errors import (
    GatewayError,
    from_upstream_status,
    upstream_timeout,
    upstream_unreachable,
)
from ledger.gateway.scrub import StreamScrubber, scrub_bytes, scrub_text

# Request fields handed on to LiteLLM; the rest of an OpenAI request has no equivalent
# across providers (and drop_params removes what a provider does not take).
_FORWARDED = (
    "tools",
    "tool_choice",
    "response_format",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "parallel_tool_calls",
    "reasoning_effort",
    "presence_penalty",
    "frequency_penalty",
    "user",
    "n",  # reserved for: the gateway reserves n completions
)


@functools.cache
def _litellm() -> ModuleType:
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


async def load() -> ModuleType:
    return await asyncio.to_thread(_litellm)


def _kwargs(call: Call) -> dict[str, Any]:
    key = call.key
    kwargs: dict[str, Any] = {
        "model": f"{key.litellm_provider}/{key.model}" if key.litellm_provider else key.model,
        "messages": call.messages,
        "max_tokens": call.max_tokens,
        "timeout": call.timeout,
        "drop_params": True,
        "num_retries": 0,
    }
    for name in _FORWARDED:
        if name in call.payload:
            kwargs[name] = call.payload[name]
    if key.effort and "reasoning_effort" not in kwargs:
        kwargs["reasoning_effort"] = key.effort
    if key.upstream_key:
        kwargs["api_key"] = key.upstream_key
    if key.api_base:
        kwargs["api_base"] = key.api_base
    if call.stream:
        kwargs["stream"] = True
        kwargs["stream_options"] = {"include_usage": True}
    return kwargs


def _map(exc: Exception, secret: str | None) -> GatewayError:
    lib = _litellm()
    message = scrub_text(str(getattr(exc, "message", exc)), secret)[:500]
    if isinstance(exc, lib.Timeout):
        return upstream_timeout()
    if isinstance(exc, lib.APIConnectionError):
        return upstream_unreachable(message)
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return from_upstream_status(status, message)
    return upstream_unreachable(message)


async def complete(call: Call, usage: Usage) -> bytes:
    lib = await load()
    try:
        resp = await lib.acompletion(**_kwargs(call))
    except Exception as exc:  # LiteLLM raises its own tree; map every one
        raise _map(exc, call.key.upstream_key) from exc
    data: dict[str, Any] = resp.model_dump(exclude_none=True)
    usage.take(data.get("usage"))
    return scrub_bytes(json.dumps(data).encode(), call.key.upstream_key)


async def open_stream(call: Call, usage: Usage) -> AsyncIterator[bytes]:
    lib = await load()
    try:
        stream = await lib.acompletion(**_kwargs(call))
    except Exception as exc:
        raise _map(exc, call.key.upstream_key) from exc
    return _relay(stream, call, usage)


async def _relay(stream: Any, call: Call, usage: Usage) -> AsyncIterator[bytes]:
    secret = call.key.upstream_key
    scrubber = StreamScrubber(secret) if secret else None
    try:
        async for chunk in stream:
            data = chunk.model_dump(exclude_none=True)
            if data.get("usage"):
                usage.take(data["usage"])
                if not call.include_usage:
                    data.pop("usage")
                    if not data.get("choices"):
                        continue
            usage.output_chunks += 1
            if scrubber is not None:
                data = scrubber.chunk(data)
            yield scrub_bytes(sse(data), secret)
        if scrubber is not None and (rest := scrubber.rest()) is not None:
            yield sse(rest)
        yield SSE_DONE
    except Exception:
        usage.outcome = "upstream_error"
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
