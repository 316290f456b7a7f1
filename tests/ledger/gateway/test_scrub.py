"""The stream scrubber: a provider key spread over chunks never reaches the agent whole."""

from __future__ import annotations

from typing import Any

from ledger.gateway.scrub import MASK, StreamScrubber

KEY = "sk-live-0123456789abcdefghij/KLMN"


def chunk(content: str | None = None, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    if content is not None:
        delta["content"] = content
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def relay(pieces: list[dict[str, Any]], field: str = "content") -> str:
    scrubber = StreamScrubber(KEY)
    out = []
    for piece in pieces:
        got = scrubber.chunk(piece)
        out.append(got["choices"][0]["delta"].get(field) or "")
    rest = scrubber.rest()
    if rest is not None:
        out.append(rest["choices"][0]["delta"].get(field) or "")
    return "".join(out)


def test_a_key_split_at_every_point_is_masked() -> None:
    text = f"before {KEY} after"
    for size in range(1, len(text) + 1):
        pieces = [chunk(text[i : i + size]) for i in range(0, len(text), size)]
        assert relay(pieces) == f"before {MASK} after", size


def test_text_that_only_looks_like_a_key_start_is_released_unchanged() -> None:
    # "sk-" and "sk-live" begin the key but the text goes elsewhere: nothing is lost.
    pieces = [chunk("ask sk-"), chunk("li"), chunk("ve fish"), chunk("", "stop")]
    assert relay(pieces) == "ask sk-live fish"


def test_a_held_back_tail_is_flushed_at_the_finish() -> None:
    scrubber = StreamScrubber(KEY)
    first = scrubber.chunk(chunk("ends with sk"))
    assert first["choices"][0]["delta"]["content"] == "ends with "
    last = scrubber.chunk(chunk(None, "stop"))
    assert last["choices"][0]["delta"]["content"] == "sk"
    assert scrubber.rest() is None


def test_a_long_key_prefix_left_at_the_end_is_masked() -> None:
    assert relay([chunk("leak " + KEY[:-1])]) == "leak " + MASK


def test_tool_call_arguments_are_scrubbed_across_chunks() -> None:
    half = len(KEY) // 2

    def call(args: str) -> dict[str, Any]:
        return chunk(None, tool_calls=[{"index": 0, "function": {"arguments": args}}])

    scrubber = StreamScrubber(KEY)
    seen = []
    for piece in (call('{"x": "' + KEY[:half]), call(KEY[half:] + '"}')):
        delta = scrubber.chunk(piece)["choices"][0]["delta"]
        seen.append(delta["tool_calls"][0]["function"]["arguments"])
    assert "".join(seen) == '{"x": "' + MASK + '"}'
