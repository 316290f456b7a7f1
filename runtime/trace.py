"""The JSONL trace and transcript an agent leaves in its home for the platform to ingest.

Every line is redacted before it is written: the exact secret strings from the birth config and
anything that looks like a bearer token. Lines are flushed one by one, so a killed sandbox loses
at most the line being written.
"""

from __future__ import annotations

import json
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

REDACTED = "[REDACTED]"
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_-]{12,})")


class Redactor:
    """Masks known secrets and bearer-looking tokens in text."""

    def __init__(self, secrets: list[str]) -> None:
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
        return _KEY_LIKE.sub(REDACTED, text)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _JsonlFile:
    def __init__(self, path: Path, redact: Redactor) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._redact = redact
        self._lock = threading.Lock()
        self._fh: TextIO = path.open("a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        line = self._redact(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            self._fh.write(line + "\n")
            self._fh.flush()

    def close(self) -> None:
        with self._lock:
            self._fh.close()


class TraceWriter:
    """Writes trace events ``{run_id, agent_id, seq, ts, type, turn, step, data}``."""

    def __init__(self, path: Path, run_id: str, agent_id: str, redact: Redactor) -> None:
        self._file = _JsonlFile(path, redact)
        self.run_id = run_id
        self.agent_id = agent_id
        self.seq = 0
        self.turn = 0
        self.step = 0

    @property
    def path(self) -> Path:
        return self._file.path

    def emit(self, type_: str, **data: Any) -> None:
        self.seq += 1
        self._file.write(
            {
                "run_id": self.run_id,
                "agent_id": self.agent_id,
                "seq": self.seq,
                "ts": _now_iso(),
                "type": type_,
                "turn": self.turn,
                "step": self.step,
                "data": data,
            }
        )

    def close(self) -> None:
        self._file.close()


class TranscriptWriter:
    """Appends every message that enters the history, so a run can be replayed from the record."""

    def __init__(self, path: Path, redact: Redactor) -> None:
        self._file = _JsonlFile(path, redact)

    def message(self, message: dict[str, Any]) -> None:
        self._file.write({"ts": _now_iso(), "kind": "message", "message": message})

    def note(self, kind: str, **data: Any) -> None:
        self._file.write({"ts": _now_iso(), "kind": kind, **data})

    def close(self) -> None:
        self._file.close()
