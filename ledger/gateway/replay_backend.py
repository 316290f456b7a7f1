"""The replay provider: a realm's calls answered from an earlier realm's recording.

A realm replays when its run_config carries ``replay`` (written by
:mod:`realms.replay.service`): ``{"source": REALM, "mode": "replay"|"fork",
"limits": {agent: calls} | null, "on_divergence": "conclude"|"live"}``. The Nth call of
an agent is matched against the Nth recorded call of the same agent (what matches is in
:mod:`realms.replay.match`); a match is answered with the recorded response, metered at
no cost. Then:

- past its limit (a fork's point), the agent goes live: its calls reach the key's own
  provider from then on;
- a request that differs is a divergence: chronicled (``replay`` event ``diverged``, with
  the first difference), then either the realm concludes (``replay_diverged``; the call
  is refused with a 409) or the agent goes live, per ``on_divergence``;
- a call past the end of the recording (the recorded realm ended there) is refused with a
  409 ``replay_exhausted`` (chronicled once), or goes live under ``on_divergence: live``.

On the scripted provider a replayed answer moves the script's cursor as the recorded
call did, so an agent that goes live carries on where its script was. An agent's place
in the recording is kept in memory, and after a gateway restart it is taken from the
replaying realm's own recording.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from chronicle.kinds import Kind
from chronicle.services import record_event
from ledger.gateway.call import SSE_DONE, Call, Usage, sse
from ledger.gateway.errors import GatewayError
from ledger.gateway.scrub import scrub_text
from realms.replay import match, recording
from realms.services.conclude import begin_conclusion

T = TypeVar("T")
Runner = Callable[[Callable[[], T]], Awaitable[T]]
Slot = tuple[str, str]  # realm, agent

DIVERGED = "replay_diverged"


@dataclass(frozen=True)
class Spec:
    source: str
    mode: str
    limits: Mapping[str, int] | None
    on_divergence: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Spec:
        limits = raw.get("limits")
        return cls(
            source=str(raw.get("source") or ""),
            mode=str(raw.get("mode") or "replay"),
            limits={str(k): int(v) for k, v in limits.items()}
            if isinstance(limits, Mapping)
            else None,
            on_divergence="live" if raw.get("on_divergence") == "live" else "conclude",
        )


@dataclass(frozen=True)
class Answer:
    completion: dict[str, Any]
    status: int
    tokens_in: int
    tokens_out: int
    cursor: int | None = None


def _refusal(code: str, message: str) -> GatewayError:
    return GatewayError(409, message, type_="invalid_request_error", code=code, retryable=False)


class Replayer:
    def __init__(self) -> None:
        self._next: dict[Slot, int] = {}
        self._live: set[Slot] = set()
        self._ended: dict[Slot, str] = {}
        self._calls: dict[tuple[Path, str], list[recording.RecordedCall]] = {}

    async def answer(self, run: Runner[Any], call: Call) -> Answer | None:
        """The recorded answer to this call, or None when it goes to the live provider."""
        assert call.key.replay is not None
        spec = Spec.parse(call.key.replay)
        key = call.key
        slot = (key.realm_id, key.agent_id)
        if slot in self._live:
            return None
        if slot in self._ended:
            raise _refusal(DIVERGED, self._ended[slot])
        if slot not in self._next:
            done = await run(
                lambda: len(recording.calls(recording.live_dir(key.realm_id), key.agent_id))
            )
            self._next.setdefault(slot, done)
        self._next[slot] += 1
        number = self._next[slot]
        limit = None if spec.limits is None else spec.limits.get(key.agent_id, 0)
        if limit is not None and number > limit:
            self._live.add(slot)
            await run(
                lambda: self._note(
                    key.realm_id,
                    {
                        "event": "live",
                        "agent": key.agent_id,
                        "call": number,
                        "reason": "the fork point",
                    },
                )
            )
            return None
        found: Answer | None = await run(lambda: self._match(call, spec, slot, number))
        return found

    def _source_calls(self, folder: Path, agent: str) -> list[recording.RecordedCall]:
        cached = self._calls.get((folder, agent))
        if cached is None:
            cached = self._calls[(folder, agent)] = recording.calls(folder, agent)
        return cached

    def _note(self, realm_id: str, payload: dict[str, Any]) -> None:
        record_event(realm_id, Kind.REPLAY, payload)

    def _match(self, call: Call, spec: Spec, slot: Slot, number: int) -> Answer | None:
        key = call.key
        folder = recording.find(spec.source)
        if folder is None:
            return self._diverged(call, spec, slot, number, "the recording is gone", None)
        recorded = self._source_calls(folder, key.agent_id)
        if number > len(recorded):
            return self._exhausted(call, spec, slot, number, len(recorded))
        entry = recorded[number - 1]
        realms = (spec.source, key.realm_id)
        try:
            before = recording.read_blob(folder, entry.request)
            answer = recording.read_blob(folder, entry.response)
        except (OSError, ValueError) as exc:
            return self._diverged(
                call, spec, slot, number, f"recorded call unreadable: {exc}", None
            )
        diff = match.first_difference(
            match.comparable(before, realms), match.comparable(call.payload, realms)
        )
        if diff is not None:
            return self._diverged(call, spec, slot, number, "the request differs", diff)
        return Answer(
            completion=answer if isinstance(answer, dict) else {},
            status=entry.status,
            tokens_in=entry.tokens_in,
            tokens_out=entry.tokens_out,
            cursor=entry.cursor,
        )

    def _diverged(
        self,
        call: Call,
        spec: Spec,
        slot: Slot,
        number: int,
        why: str,
        diff: match.Difference | None,
    ) -> Answer | None:
        key = call.key
        live = spec.on_divergence == "live" or spec.mode == "fork"
        payload: dict[str, Any] = {
            "event": "diverged",
            "agent": key.agent_id,
            "call": number,
            "source": spec.source,
            "why": why,
            "then": "live" if live else "concluded",
        }
        if diff is not None:
            # The new request is the agent's own text: the keys are masked as in recordings.
            shown = diff.replayed
            for secret in (call.bearer, key.upstream_key):
                shown = scrub_text(shown, secret)
            diff = match.Difference(diff.path, diff.recorded, shown)
            payload.update(path=diff.path, recorded=diff.recorded, replayed=diff.replayed)
        self._note(key.realm_id, payload)
        detail = f"{key.agent_id} call {number} {why}" + (f" at {diff.line()}" if diff else "")
        if live:
            self._live.add(slot)
            return None
        self._ended[slot] = f"replay diverged: {detail}"
        begin_conclusion(key.realm_id, DIVERGED, detail)
        raise _refusal(DIVERGED, self._ended[slot])

    def _exhausted(
        self, call: Call, spec: Spec, slot: Slot, number: int, recorded: int
    ) -> Answer | None:
        key = call.key
        live = spec.on_divergence == "live" or spec.mode == "fork"
        first = slot not in self._ended and slot not in self._live
        if first:
            self._note(
                key.realm_id,
                {
                    "event": "exhausted",
                    "agent": key.agent_id,
                    "call": number,
                    "recorded": recorded,
                    "then": "live" if live else "refused",
                },
            )
        if live:
            self._live.add(slot)
            return None
        raise _refusal(
            "replay_exhausted",
            f"the recording of {spec.source} has {recorded} calls of {key.agent_id}; "
            f"call {number} was never made there",
        )


def _take(call: Call, answer: Answer, usage: Usage) -> None:
    usage.tokens_in, usage.tokens_out, usage.free = answer.tokens_in, answer.tokens_out, True
    if call.key.transport == "scripted":
        # The script's place moves as it did, so a fork goes live where the script was.
        usage.cursor = answer.cursor


def check_status(answer: Answer) -> None:
    """A recorded refusal is refused again, as it was."""
    if answer.status < 400:
        return
    err = answer.completion.get("error") if isinstance(answer.completion, dict) else None
    err = err if isinstance(err, dict) else {}
    raise GatewayError(
        answer.status,
        str(err.get("message") or "the recorded call failed"),
        type_=str(err.get("type") or "api_error"),
        code=str(err.get("code") or "replayed_error"),
        retryable=bool(err.get("retryable")),
    )


def completion(call: Call, answer: Answer, usage: Usage) -> bytes:
    check_status(answer)
    _take(call, answer, usage)
    return json.dumps(answer.completion).encode()


async def stream(call: Call, answer: Answer, usage: Usage) -> AsyncIterator[bytes]:
    """The recorded completion as SSE chunks, as a provider would stream it."""
    _take(call, answer, usage)
    done = answer.completion
    base = {
        "id": str(done.get("id") or f"chatcmpl-{uuid.uuid4().hex}"),
        "object": "chat.completion.chunk",
        "created": int(done.get("created") or time.time()),
        "model": str(done.get("model") or call.key.model),
    }

    def chunk(index: object, delta: dict[str, Any], finish: str | None = None) -> bytes:
        usage.output_chunks += 1
        return sse({**base, "choices": [{"index": index, "delta": delta, "finish_reason": finish}]})

    for choice in done.get("choices") or ():
        index = choice.get("index", 0)
        message = choice.get("message") or {}

        yield chunk(index, {"role": message.get("role") or "assistant", "content": ""})
        text = message.get("content")
        if isinstance(text, str) and text:
            yield chunk(index, {"content": text})
        for i, tc in enumerate(message.get("tool_calls") or ()):
            yield chunk(
                index,
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": tc.get("id"),
                            "type": "function",
                            "function": tc.get("function"),
                        }
                    ]
                },
            )
        yield chunk(index, {}, choice.get("finish_reason"))
    if call.include_usage and isinstance(done.get("usage"), dict):
        yield sse({**base, "choices": [], "usage": done["usage"]})
    yield SSE_DONE
