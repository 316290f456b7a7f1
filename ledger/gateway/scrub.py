"""Taking the provider key out of whatever the gateway relays from an upstream.

An upstream, or a proxy before it, may quote the credential it was sent, in an error or in
an answer. Every body the gateway relays, successful or not, streamed or not, goes through
here. What is caught: the key as written and with the slashes JSON may escape. An upstream
that encodes the key on purpose already holds it and is beyond what a relay can catch.
"""

from __future__ import annotations

import functools
from typing import Any

MASK = "***"
_MASK_BYTES = MASK.encode()


@functools.lru_cache(maxsize=1024)
def _forms(secret: str) -> tuple[tuple[str, bytes], ...]:
    """The key as written, and with the slashes JSON may escape (as text and as bytes)."""
    forms = dict.fromkeys((secret, secret.replace("/", "\\/")))
    return tuple((form, form.encode()) for form in forms)


def scrub_bytes(body: bytes, secret: str | None) -> bytes:
    """``body`` without the provider key.

    A substring search or two when the key is absent, which is always but for an upstream
    (or a proxy before it) that quotes the request's credential back.
    """
    if not secret:
        return body
    for _, raw in _forms(secret):
        if raw in body:
            body = body.replace(raw, _MASK_BYTES)
    return body


def scrub_text(text: str, secret: str | None) -> str:
    if not secret:
        return text
    for form, _ in _forms(secret):
        if form in text:
            text = text.replace(form, MASK)
    return text


# A held-back tail of at least this many characters is masked when released.
_LONG_PREFIX = 8

# The delta fields whose text an upstream may spread a key over, chunk by chunk.
_TEXT_FIELDS = ("content", "refusal", "reasoning_content")


def _held_back(text: str, forms: tuple[tuple[str, bytes], ...]) -> int:
    """How many trailing characters of ``text`` could be the start of a key form."""
    best = 0
    for form, _ in forms:
        first = form[0]
        start = max(0, len(text) - len(form) + 1)
        i = text.find(first, start)
        while i != -1:
            if form.startswith(text[i:]):
                best = max(best, len(text) - i)
                break  # the earliest match is the longest suffix for this form
            i = text.find(first, i + 1)
    return best


class StreamScrubber:
    """Takes the key out of streamed text even when the upstream splits it over chunks.

    Each choice's text fields (and each tool call's arguments) keep back the tail that
    could still grow into the key, and release it with the next piece once it cannot, or
    when the choice finishes or the stream ends. What reaches the agent is the same text,
    at most one key's length later.
    """

    def __init__(self, secret: str) -> None:
        self._secret = secret
        self._forms = _forms(secret)
        self._pending: dict[tuple[object, ...], str] = {}

    def _pass(self, slot: tuple[object, ...], piece: str) -> str:
        text = scrub_text(self._pending.pop(slot, "") + piece, self._secret)
        keep = _held_back(text, self._forms)
        if keep:
            self._pending[slot] = text[-keep:]
            return text[:-keep]
        return text

    def _release(self, slot: tuple[object, ...]) -> str:
        # A tail this long that is still the key's beginning is most of the key: masked.
        rest = self._pending.pop(slot, "")
        return MASK if len(rest) >= _LONG_PREFIX else rest

    def chunk(self, obj: dict[str, Any]) -> dict[str, Any]:
        """The chunk with its text scrubbed, and what it finishes flushed into it."""
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return obj
        for choice in choices:
            if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
                continue
            index, delta = choice.get("index"), choice["delta"]
            for name in _TEXT_FIELDS:
                if isinstance(delta.get(name), str):
                    delta[name] = self._pass((index, name), delta[name])
            for call in delta.get("tool_calls") or ():
                fn = call.get("function") if isinstance(call, dict) else None
                if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                    fn["arguments"] = self._pass(
                        (index, "tool", call.get("index")), fn["arguments"]
                    )
            if choice.get("finish_reason") is not None:
                for name in _TEXT_FIELDS:
                    rest = self._release((index, name))
                    if rest:
                        delta[name] = str(delta.get(name) or "") + rest
                for slot in [s for s in self._pending if s[:2] == (index, "tool")]:
                    rest = self._release(slot)
                    delta.setdefault("tool_calls", []).append(
                        {"index": slot[2], "function": {"arguments": rest}}
                    )
        return obj

    def rest(self) -> dict[str, Any] | None:
        """A last chunk with what is still held back, when the stream ends unfinished."""
        if not self._pending:
            return None
        choices: dict[object, dict[str, object]] = {}
        for slot in list(self._pending):
            text = self._release(slot)
            index = slot[0]
            delta = choices.setdefault(index, {"index": index, "delta": {}})["delta"]
            assert isinstance(delta, dict)
            if slot[1] == "tool":
                delta.setdefault("tool_calls", []).append(
                    {"index": slot[2], "function": {"arguments": text}}
                )
            else:
                delta[str(slot[1])] = text
        self._pending.clear()
        return {"object": "chat.completion.chunk", "choices": list(choices.values())}
