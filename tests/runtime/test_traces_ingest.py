from __future__ import annotations

from typing import Any

import pytest

from chronicle.models import Event
from chronicle.traces import ingest_trace
from runtime.trace import Redactor, TraceWriter

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(30)]


def trace_rows(realm_id: str) -> list[dict[str, Any]]:
    return [e.payload for e in Event.objects.filter(realm_id=realm_id, kind="trace").order_by("id")]


def test_ingest_resumes_from_the_saved_offset_and_is_idempotent(tmp_path):
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path, "run-a", "pong", Redactor(["vk-secret-123"]))
    writer.emit("run_start", version="0.1.0")
    writer.emit("wake", source=["message"])
    writer.emit("model_request", messages=2, note="vk-secret-123")
    assert ingest_trace("realm1", "pong", path) == 3
    assert ingest_trace("realm1", "pong", path) == 0
    rows = trace_rows("realm1")
    assert [r["type"] for r in rows] == ["run_start", "wake", "model_request"]
    assert [r["seq"] for r in rows] == [1, 2, 3]
    assert all(r["agent_id"] == "pong" and r["run_id"] == "run-a" for r in rows)
    assert rows[2]["data"]["note"] == "[REDACTED]"

    writer.emit("model_response", usage={"prompt_tokens": 5})
    with path.open("a") as handle:
        handle.write('{"seq": 99, "run_id": "run-a", "type": "half')  # still being written
    assert ingest_trace("realm1", "pong", path) == 1
    with path.open("a") as handle:
        handle.write('way"}\nnot json at all\n')
    assert ingest_trace("realm1", "pong", path) == 1
    assert [r["seq"] for r in trace_rows("realm1")] == [1, 2, 3, 4, 99]
    assert ingest_trace("realm1", "pong", path) == 0
    # Another agent's trace in the same realm has its own offset.
    other = tmp_path / "other.jsonl"
    TraceWriter(other, "run-b", "ping", Redactor([])).emit("run_start")
    assert ingest_trace("realm1", "ping", other) == 1
    assert ingest_trace("realm1", "pong", path) == 0


def test_ingest_refuses_symlinks_and_missing_files(tmp_path):
    secret = tmp_path / "host-file.jsonl"
    secret.write_text('{"seq": 1, "run_id": "x", "type": "leak"}\n')
    link = tmp_path / "trace.jsonl"
    link.symlink_to(secret)
    assert ingest_trace("realm2", "pong", link) == 0
    assert ingest_trace("realm2", "pong", tmp_path / "missing.jsonl") == 0
    assert trace_rows("realm2") == []


def test_a_restarted_runtime_starts_a_new_run_in_the_same_file(tmp_path):
    path = tmp_path / "trace.jsonl"
    TraceWriter(path, "run-1", "pong", Redactor([])).emit("run_start")
    assert ingest_trace("realm3", "pong", path) == 1
    TraceWriter(path, "run-2", "pong", Redactor([])).emit("run_start")
    assert ingest_trace("realm3", "pong", path) == 1
    assert [(r["run_id"], r["seq"]) for r in trace_rows("realm3")] == [("run-1", 1), ("run-2", 1)]
