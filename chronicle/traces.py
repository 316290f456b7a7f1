"""Host-side ingestion of an agent runtime's JSONL trace into Chronicle ``trace`` events.

The runtime writes ``.bearpit/trace.jsonl`` in the agent's home (secrets already redacted);
the Warden calls :func:`ingest_trace` each tick. The byte offset reached is stored in the
payload of every ingested event, so resuming needs no state outside the Chronicle and a
repeated call ingests nothing twice. The file is agent-writable, so it is read as untrusted:
no symlinks, complete lines only, bounded sizes.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from chronicle.kinds import Kind
from chronicle.models import Event, now_ms
from chronicle.services import record_event

MAX_LINE_BYTES = 256 * 1024
MAX_DATA_CHARS = 8000
# A model call's record carries the request as the model saw it (the runtime bounds it,
# far below the line limit) and its reply: kept whole for the agent's own view.
MAX_DATA_CHARS_BY_TYPE = {"model_request": 200_000, "model_response": 40_000}
MAX_EVENTS_PER_CALL = 2000


@contextmanager
def _agent_lock(realm_id: str, agent_id: str) -> Iterator[None]:
    """One ingester per agent trace at a time, across worker processes on this host.
    Not under ``run/``: sandboxes see that directory, and these names are every realm's."""
    lock_dir = Path(settings.BEARPIT_HOME) / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in f"{realm_id}--{agent_id}")
    with (lock_dir / f"trace-{safe}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _resume_point(realm_id: str, agent_id: str) -> tuple[int, str | None, int]:
    """(byte offset, run id, seq) of the last ingested record of this agent."""
    last = (
        Event.objects.filter(realm_id=realm_id, kind=Kind.TRACE, payload__agent_id=agent_id)
        .order_by("-id")
        .values_list("payload", flat=True)
        .first()
    )
    if not isinstance(last, dict):
        return 0, None, 0
    return int(last.get("offset", 0)), last.get("run_id"), int(last.get("seq", 0))


def _ts_ms(value: Any) -> int:
    if isinstance(value, str):
        try:
            return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
        except ValueError:
            pass
    return now_ms()


def _bounded(data: Any, limit: int = MAX_DATA_CHARS) -> Any:
    try:
        text = json.dumps(data, ensure_ascii=False, default=str)
    except RecursionError:
        return {"truncated": True, "text": "(nested too deep to keep)"}
    if len(text) <= limit:
        return data
    return {"truncated": True, "text": text[:limit]}


def _read_from(path: Path, offset: int) -> tuple[bytes, int]:
    """Bytes after ``offset`` (from 0 again if the file shrank) and the offset they start at."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < offset:
            offset = 0
        handle.seek(offset)
        return handle.read(), offset


def ingest_trace(realm_id: str, agent_id: str, path: Path) -> int:
    """Append the new records of ``path`` as ``trace`` events; return how many were added."""
    with _agent_lock(realm_id, agent_id):
        offset, last_run, last_seq = _resume_point(realm_id, agent_id)
        try:
            chunk, start = _read_from(Path(path), offset)
        except (FileNotFoundError, OSError):
            return 0
        added = 0
        position = start
        with transaction.atomic():
            for raw in chunk.splitlines(keepends=True):
                if not raw.endswith(b"\n") or added >= MAX_EVENTS_PER_CALL:
                    break  # a line still being written, or enough for one call
                position += len(raw)
                if len(raw) > MAX_LINE_BYTES:
                    continue
                try:
                    record = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                    continue
                if not isinstance(record, dict) or not isinstance(record.get("seq"), int):
                    continue
                run_id = str(record.get("run_id", ""))[:80]
                if run_id == last_run and record["seq"] <= last_seq:
                    continue
                kind = str(record.get("type", ""))[:40]
                limit = MAX_DATA_CHARS_BY_TYPE.get(kind, MAX_DATA_CHARS)
                record_event(
                    realm_id,
                    Kind.TRACE,
                    {
                        "agent_id": agent_id,
                        "run_id": run_id,
                        "seq": record["seq"],
                        "type": kind,
                        "turn": record.get("turn"),
                        "step": record.get("step"),
                        "data": _bounded(record.get("data", {}), limit),
                        "offset": position,
                    },
                    ts_ms=_ts_ms(record.get("ts")),
                )
                last_run, last_seq = run_id, record["seq"]
                added += 1
        return added
