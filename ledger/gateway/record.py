"""Recording a realm's model calls, off the request path.

Each answered call hands what it saw to ``Recorder.record`` on the event loop: a
reference to the request, the response bytes (or the stream's chunks as relayed) and the
call's usage. Nothing is hashed, parsed or written there; one writer thread does that,
in arrival order, and numbers each agent's calls as it appends them (so the numbering
survives a gateway restart: it continues from the index on disk). A recording that
cannot be written is logged and skipped: it never fails a call.

Secrets never reach the files: the request is the body the agent sent (no headers), with
the agent's own virtual key and any provider key masked wherever they occur; responses
were already scrubbed of the provider key by the backends, and are scrubbed again here.
The layout and the readers are in :mod:`realms.replay.recording`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ledger.gateway.call import Call, Usage
from ledger.gateway.scrub import scrub_bytes
from realms.replay import recording

log = logging.getLogger("ledger.gateway")


@dataclass
class Pending:
    """One call as the hot path saw it; turned into files by the writer thread."""

    call: Call
    usage: Usage
    status: int
    body: bytes | None
    chunks: list[bytes] | None
    started_ms: int
    ended_ms: int


def now_ms() -> int:
    return int(time.time() * 1000)


class Recorder:
    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ledger-record")
        self._counts: dict[tuple[str, str], int] = {}

    def record(
        self,
        call: Call,
        usage: Usage,
        *,
        status: int,
        body: bytes | None = None,
        chunks: list[bytes] | None = None,
        started_ms: int,
    ) -> None:
        """Queue one answered call for writing (cheap: one hand-off to the writer)."""
        if not call.key.record:
            return
        item = Pending(call, usage, status, body, chunks, started_ms, now_ms())
        self._pool.submit(self._write, item)

    def close(self) -> None:
        """Write what is queued, then stop."""
        self._pool.shutdown(wait=True)

    def _write(self, item: Pending) -> None:
        key = item.call.key
        try:
            write_call(item, self._counts)
        except Exception:
            log.exception("recording a call of %s/%s failed", key.realm_id, key.agent_id)


def _scrub(data: bytes, call: Call) -> bytes:
    for secret in (call.bearer, call.key.upstream_key):
        data = scrub_bytes(data, secret)
    return data


def _put_blob(folder: Path, data: bytes) -> str:
    digest = recording.blob_name(data)
    path = recording.blob_path(folder, digest)
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return digest


def _response(item: Pending) -> Any:
    if item.chunks is not None:
        return assemble_stream(item.chunks)
    try:
        return json.loads(item.body or b"null")
    except ValueError:
        return {"unparsed": (item.body or b"").decode("utf-8", "replace")}


def write_call(item: Pending, counts: dict[tuple[str, str], int]) -> None:
    call, key = item.call, item.call.key
    folder = recording.live_dir(key.realm_id)
    index = recording.index_path(folder, key.agent_id)
    for sub in (folder / "blobs", folder / "calls"):
        sub.mkdir(parents=True, exist_ok=True, mode=0o700)
    request = _put_blob(folder, _scrub(recording.canonical(call.payload), call))
    answer = _response(item)
    response = _put_blob(folder, _scrub(recording.canonical(answer), call))
    slot = (key.realm_id, key.agent_id)
    if slot not in counts:
        counts[slot] = len(recording.calls(folder, key.agent_id))
    counts[slot] += 1
    reported = answer.get("usage") if isinstance(answer, dict) else None
    reported = reported if isinstance(reported, dict) else {}
    tokens_in = item.usage.tokens_in
    tokens_out = item.usage.tokens_out
    row = {
        "call": counts[slot],
        "request": request,
        "response": response,
        "model": key.model,
        "tokens_in": tokens_in if tokens_in is not None else reported.get("prompt_tokens", 0),
        "tokens_out": tokens_out
        if tokens_out is not None
        else reported.get("completion_tokens", 0),
        "stream": call.stream,
        "status": item.status,
        "outcome": item.usage.outcome,
        "started_ms": item.started_ms,
        "ended_ms": item.ended_ms,
    }
    if item.usage.cursor is not None:
        row["cursor"] = item.usage.cursor  # the scripted provider's place after this call
    with index.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, sort_keys=True) + "\n")


def assemble_stream(chunks: list[bytes]) -> dict[str, Any]:
    """The SSE chunks of one streamed completion as the one completion they spell."""
    choices: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {}
    usage: Any = None
    for line in b"".join(chunks).split(b"\n"):
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            continue
        with contextlib.suppress(ValueError):
            obj = json.loads(data)
            if not isinstance(obj, dict):
                continue
            for field in ("id", "created", "model"):
                if field in obj and field not in head:
                    head[field] = obj[field]
            if obj.get("usage"):
                usage = obj["usage"]
            for choice in obj.get("choices") or ():
                if isinstance(choice, dict):
                    _merge(choices, choice)
    out: dict[str, Any] = {"object": "chat.completion", **head}
    out["choices"] = [_finish(choices[i]) for i in sorted(choices)]
    if usage is not None:
        out["usage"] = usage
    return out


def _merge(choices: dict[int, dict[str, Any]], choice: dict[str, Any]) -> None:
    raw_index = choice.get("index")
    index = raw_index if isinstance(raw_index, int) else 0
    slot = choices.setdefault(index, {"index": index, "content": [], "tools": {}})
    raw_delta = choice.get("delta")
    delta: dict[str, Any] = raw_delta if isinstance(raw_delta, dict) else {}
    if isinstance(delta.get("content"), str):
        slot["content"].append(delta["content"])
    if isinstance(delta.get("role"), str):
        slot["role"] = delta["role"]
    for tc in delta.get("tool_calls") or ():
        if not isinstance(tc, dict):
            continue
        at = tc.get("index") if isinstance(tc.get("index"), int) else len(slot["tools"])
        tool = slot["tools"].setdefault(at, {"type": "function", "name": "", "arguments": []})
        if tc.get("id"):
            tool["id"] = tc["id"]
        raw_fn = tc.get("function")
        fn: dict[str, Any] = raw_fn if isinstance(raw_fn, dict) else {}
        if fn.get("name"):
            tool["name"] += str(fn["name"])
        if isinstance(fn.get("arguments"), str):
            tool["arguments"].append(fn["arguments"])
    if choice.get("finish_reason") is not None:
        slot["finish_reason"] = choice["finish_reason"]


def _finish(slot: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": slot.get("role", "assistant"),
        "content": "".join(slot["content"]),
    }
    if slot["tools"]:
        message["tool_calls"] = [
            {
                "id": tool.get("id", ""),
                "type": tool["type"],
                "function": {"name": tool["name"], "arguments": "".join(tool["arguments"])},
            }
            for _, tool in sorted(slot["tools"].items())
        ]
    return {
        "index": slot["index"],
        "message": message,
        "finish_reason": slot.get("finish_reason"),
    }
