"""A long conversation stays under the model's context: old tool results are left out."""

from __future__ import annotations

from typing import Any

from scribe.services.conversation import KEEP_RECENT, MAX_CONTEXT_CHARS, OMITTED, _for_model


def test_old_tool_results_are_left_out_first() -> None:
    big = "x" * (MAX_CONTEXT_CHARS // 40)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "make a realm"}]
    for i in range(60):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": str(i)}]})
        messages.append({"role": "tool", "tool_call_id": str(i), "content": big})
    sent = _for_model(messages)
    assert len(sent) == len(messages)
    assert sum(len(str(m.get("content") or "")) for m in sent) <= MAX_CONTEXT_CHARS
    assert sent[0] == messages[0]
    assert sent[-KEEP_RECENT:] == messages[-KEEP_RECENT:]
    assert sent[2]["content"] == OMITTED and sent[2]["tool_call_id"] == "0"
    assert messages[2]["content"] == big  # what is stored is not changed
    short = messages[:5]
    assert _for_model(short) == short
