"""The recording's writer and the replay's matching, on real files (no realm needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ledger.gateway.auth import KeyInfo
from ledger.gateway.call import Call, Usage, sse
from ledger.gateway.record import Pending, Writer, assemble_stream
from realms.replay import match, recording

BEARER = "bpk-" + "A" * 43
UPSTREAM = "sk-upstream-secret-0123456789"


def _call(payload: dict[str, Any], *, stream: bool = False) -> Call:
    key = KeyInfo(
        id=1,
        realm_id="duel-abc123",
        agent_id="mara",
        provider="offline",
        model="scripted-small",
        transport="scripted",
        litellm_provider="",
        api_base="",
        effort="",
        input_price=None,
        output_price=None,
        has_script=True,
        upstream_key=UPSTREAM,
        revoked=None,
    )
    return Call(
        key=key,
        payload=payload,
        messages=payload["messages"],
        max_tokens=64,
        max_tokens_given=False,
        stream=stream,
        include_usage=False,
        prompt_tokens=0,
        timeout=5.0,
        bearer=BEARER,
    )


@pytest.fixture
def home(settings: object, tmp_path: Path) -> Path:
    settings.BEARPIT_HOME = str(tmp_path)  # type: ignore[attr-defined]
    return tmp_path


def test_each_call_is_numbered_content_addressed_and_keyless(home: Path) -> None:
    writer = Writer()
    leak = {"role": "user", "content": f"my key is {BEARER} and theirs {UPSTREAM}"}
    for i in range(3):
        payload = {"model": "x", "messages": [leak, {"role": "user", "content": f"turn {i}"}]}
        body = json.dumps({"choices": [{"message": {"content": f"ok {i} {UPSTREAM}"}}]})
        usage = Usage(tokens_in=10 + i, tokens_out=2, cursor=i + 1)
        writer.write(Pending(_call(payload), usage, 200, body.encode(), None, 1, 2))
    folder = recording.live_dir("duel-abc123")
    calls = recording.calls(folder, "mara")
    assert [c.call for c in calls] == [1, 2, 3]
    assert [c.tokens_in for c in calls] == [10, 11, 12]
    assert [c.cursor for c in calls] == [1, 2, 3]
    first = recording.read_blob(folder, calls[0].request)
    assert first["messages"][1]["content"] == "turn 0"
    everything = b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())
    assert BEARER.encode() not in everything and UPSTREAM.encode() not in everything
    assert b"***" in everything
    # The same request body is one blob: three calls, three requests, three responses.
    assert len(list((folder / "blobs").iterdir())) == 6
    # A restarted writer (no counts in memory) continues the numbering from disk.
    writer.close()
    Writer().write(Pending(_call(payload), Usage(), 200, b"{}", None, 1, 2))
    assert recording.calls(folder, "mara")[-1].call == 4


def test_a_blob_edited_by_hand_fails_loudly(home: Path) -> None:
    Writer().write(
        Pending(
            _call({"messages": [{"role": "user", "content": "hi"}]}),
            Usage(),
            200,
            b"{}",
            None,
            1,
            2,
        )
    )
    folder = recording.live_dir("duel-abc123")
    entry = recording.calls(folder, "mara")[0]
    recording.blob_path(folder, entry.request).write_text('{"messages": []}')
    with pytest.raises(ValueError, match="does not match"):
        recording.read_blob(folder, entry.request)


def test_a_stream_is_recorded_as_the_completion_it_spells() -> None:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 5, "model": "m"}
    chunks = [
        sse({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}),
        sse({**base, "choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
        sse({**base, "choices": [{"index": 0, "delta": {"content": "lo"}}]}),
        sse(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "function": {"name": "score", "arguments": '{"a"'},
                                }
                            ]
                        },
                    }
                ],
            }
        ),
        sse(
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]},
                    }
                ],
            }
        ),
        sse({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        sse({**base, "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}),
        b"data: [DONE]\n\n",
    ]
    done = assemble_stream(chunks)
    (choice,) = done["choices"]
    assert choice["message"]["content"] == "Hello"
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "score", "arguments": '{"a": 1}'}}
    ]
    assert choice["finish_reason"] == "tool_calls"
    assert done["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}


def test_what_varies_between_runs_is_normalised_and_the_rest_is_not() -> None:
    ids = ("duel-abc123", "duel-ffe001")
    before = {
        "model": "a",
        "max_tokens": 10,
        "messages": [
            {"role": "system", "content": "Realm duel-abc123, 2026-12-01T18:55:16Z, at 18:55."},
            {"role": "user", "content": "event $AbCdEfGhIjKlMnOpQrSt in !roomAbCdEfGh:realm.local"},
        ],
    }
    after: dict[str, Any] = {
        "model": "b",
        "max_tokens": 99,
        "messages": [
            {"role": "system", "content": "Realm duel-ffe001, 2026-12-02T09:01:02Z, at 09:01."},
            {"role": "user", "content": "event $ZyXwVuTsRqPoNmLkJiHg in !roomZyXwVuTs:realm.local"},
        ],
    }
    assert (
        match.first_difference(match.comparable(before, ids), match.comparable(after, ids)) is None
    )
    after["messages"][1]["content"] = "event $ZyXwVuTsRqPoNmLkJiHg in !roomZyXwVuTs:realm.local!"
    diff = match.first_difference(match.comparable(before, ids), match.comparable(after, ids))
    assert diff is not None and diff.path == "messages[1].content"
    # Shown as compared, placeholders and all.
    assert diff.replayed == "'event <event> in <room>!'"
