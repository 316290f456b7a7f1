"""Serving the scripted provider's replies in the OpenAI wire format."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from ledger.gateway.call import SSE_DONE, Call, Usage, sse
from ledger.gateway.errors import bad_request
from ledger.models import VirtualKey
from ledger.scripted import ScriptedReply, ScriptError, next_reply, parse_script
from ledger.tokens import count_messages


def compute_reply(call: Call) -> tuple[ScriptedReply, int]:
    """Pick the reply (runs in a worker thread: reads the key's script and cursor)."""
    row = VirtualKey.objects.only("script", "script_cursor").get(pk=call.key.id)
    try:
        script = parse_script(row.script)
        reply = next_reply(
            script,
            row.script_cursor,
            call.messages,
            max_tokens=call.max_tokens,
            variables={"agent": call.key.agent_id, "realm": call.key.realm_id},
        )
    except ScriptError as exc:
        raise bad_request(str(exc), code="script_error") from exc
    return reply, count_messages(call.messages, call.payload.get("tools"))


def _usage(prompt: int, reply: ScriptedReply) -> dict[str, int]:
    return {
        "prompt_tokens": prompt,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": prompt + reply.completion_tokens,
    }


def completion(call: Call, reply: ScriptedReply, prompt: int, usage: Usage) -> dict[str, Any]:
    usage.tokens_in, usage.tokens_out, usage.cursor = prompt, reply.completion_tokens, reply.cursor
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    elif not reply.text:
        message["content"] = ""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": call.key.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": _usage(prompt, reply),
    }


def _pieces(text: str, size: int = 24) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


async def stream(
    call: Call, reply: ScriptedReply, prompt: int, usage: Usage
) -> AsyncIterator[bytes]:
    """The reply as SSE chunks; usage is only known to the meter once the last chunk went."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": call.key.model,
    }
    # The whole reply exists before the first chunk goes, so it is all billed even if the
    # client hangs up early, as a provider bills what it generated.
    usage.tokens_in, usage.tokens_out, usage.cursor = prompt, reply.completion_tokens, reply.cursor

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        usage.output_chunks += 1
        return sse({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(reply.text) if reply.text else []:
        yield chunk({"content": piece})
    for i, tc in enumerate(reply.tool_calls):
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": tc["id"],
                        "type": "function",
                        "function": tc["function"],
                    }
                ]
            }
        )
    yield chunk({}, reply.finish_reason)
    if call.include_usage:
        yield sse({**base, "choices": [], "usage": _usage(prompt, reply)})
    yield SSE_DONE
