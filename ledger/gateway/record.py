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

import asyncio
import contextlib
import json
import logging
import os
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
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


# Calls answered within this long of each other go to the writer in one hand-off: waking
# its thread for every call costs the event loop more than writing costs the writer.
HAND_OFF_SECONDS = 0.005


class Recorder:
    """Recording from the event loop: ``record`` and ``hand_over`` run on it only."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="ledger-record")
        self._writer = Writer()
        self._batch: list[Pending] = []
        self._timer: asyncio.TimerHandle | None = None
        # The writer's last batch: one thread writes in order, so once it is done, so is
        # everything handed over before it.
        self._last: Future[None] | None = None

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
        """Queue one answered call for writing (cheap: nothing is written here)."""
        if not call.key.record:
            return
        self._batch.append(Pending(call, usage, status, body, chunks, started_ms, now_ms()))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(HAND_OFF_SECONDS, self.hand_over)

    def hand_over(self) -> None:
        """Give the writer what is queued, now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._batch:
            batch, self._batch = self._batch, []
            self._last = self._pool.submit(self._write, batch)

    async def written(self) -> None:
        """Return once every call recorded so far is on disk.

        The books await this before a round of settlements, so a call whose spend is
        settled is also recorded: an archive taken once a realm's calls have settled holds
        every one of them."""
        self.hand_over()
        last = self._last
        if last is not None and not last.done():
            await asyncio.wrap_future(last)

    def close(self) -> None:
        """Write what was handed over, then stop (after ``hand_over`` on the loop)."""
        self._pool.shutdown(wait=True)
        self._writer.close()

    def _write(self, batch: list[Pending]) -> None:
        for item in batch:
            key = item.call.key
            try:
                self._writer.write(item)
            except Exception:
                log.exception("recording a call of %s/%s failed", key.realm_id, key.agent_id)


def _scrub(data: bytes, call: Call) -> bytes:
    for secret in (call.bearer, call.key.upstream_key):
        data = scrub_bytes(data, secret)
    return data


class _Sink:
    """One agent's recording: its folder, its open index and how many calls it holds."""

    def __init__(self, realm_id: str, agent_id: str) -> None:
        folder = recording.live_dir(realm_id)
        index = recording.index_path(folder, agent_id)
        for sub in (folder / "blobs", folder / "calls"):
            sub.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.blobs = str(folder / "blobs")
        self.count = len(recording.calls(folder, agent_id))
        self.index = index.open("a", encoding="utf-8")


_MAX_SINKS = 256
_ROW = json.JSONEncoder(sort_keys=True)
_MAX_KNOWN_BLOBS = 100_000


class Writer:
    """Turns pending calls into files; runs on the recorder's one thread."""

    def __init__(self) -> None:
        self._sinks: dict[tuple[str, str], _Sink] = {}
        self._known: set[str] = set()

    def close(self) -> None:
        for sink in self._sinks.values():
            sink.index.close()
        self._sinks.clear()

    def _sink(self, realm_id: str, agent_id: str) -> _Sink:
        sink = self._sinks.get((realm_id, agent_id))
        if sink is None:
            if len(self._sinks) >= _MAX_SINKS:
                self.close()
            sink = self._sinks[(realm_id, agent_id)] = _Sink(realm_id, agent_id)
        return sink

    def _put(self, sink: _Sink, data: bytes) -> str:
        digest = recording.blob_name(data)
        path = os.path.join(sink.blobs, digest + ".json")
        if path in self._known:
            return digest
        if not os.path.exists(path):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        if len(self._known) >= _MAX_KNOWN_BLOBS:
            self._known.clear()
        self._known.add(path)
        return digest

    def write(self, item: Pending) -> None:
        call, key, usage = item.call, item.call.key, item.usage
        sink = self._sink(key.realm_id, key.agent_id)
        request = self._put(sink, _scrub(recording.canonical(call.payload), call))
        reported: dict[str, Any] = {}
        if item.chunks is not None:
            answer = assemble_stream(item.chunks)
            reported = answer.get("usage") or {}
            response = self._put(sink, _scrub(recording.canonical(answer), call))
        else:
            # A whole answer is JSON already: stored as relayed, parsed only for counts
            # its call did not meter.
            body = item.body or b"{}"
            if usage.tokens_in is None or usage.tokens_out is None:
                with contextlib.suppress(ValueError, AttributeError):
                    reported = json.loads(body).get("usage") or {}
            response = self._put(sink, _scrub(body, call))
        sink.count += 1
        row: dict[str, Any] = {
            "call": sink.count,
            "request": request,
            "response": response,
            "model": key.model,
            "tokens_in": usage.tokens_in
            if usage.tokens_in is not None
            else reported.get("prompt_tokens", 0),
            "tokens_out": usage.tokens_out
            if usage.tokens_out is not None
            else reported.get("completion_tokens", 0),
            "stream": call.stream,
            "status": item.status,
            "outcome": usage.outcome,
            "started_ms": item.started_ms,
            "ended_ms": item.ended_ms,
        }
        if usage.cursor is not None:
            row["cursor"] = usage.cursor  # the scripted provider's place after this call
        sink.index.write(_ROW.encode(row) + "\n")
        sink.index.flush()


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
