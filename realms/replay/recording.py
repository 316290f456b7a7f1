"""A realm's recorded model calls: where they live and how they read back.

The gateway writes them (``ledger.gateway.record``); the archive copies them; replay and
fork read them. One folder per realm, ``BEARPIT_HOME/realms/<realm>/recording/`` (never
mounted into a sandbox), holding

- ``blobs/<sha256>.json``: each distinct request and response body once, named by the
  sha256 of its bytes (a request is the canonical JSON of the body the agent sent,
  without any key; a streamed response is the stream assembled into one completion);
- ``calls/<agent>.jsonl``: one line per call of that agent, in the order the calls
  finished: ``call`` (1, 2, …), ``request`` and ``response`` (blob hashes), ``model``,
  ``tokens_in``, ``tokens_out``, ``stream``, ``status`` (the HTTP status the agent got),
  ``outcome``, ``started_ms`` and ``ended_ms``, and on the scripted provider ``cursor``
  (its place in the agent's script after the call).

An archived realm's copy (``archive/recording/``) is read when the live folder is gone.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from realms.forge import layout

FOLDER = "recording"


@dataclass(frozen=True)
class RecordedCall:
    call: int
    request: str
    response: str
    model: str
    tokens_in: int
    tokens_out: int
    stream: bool
    status: int
    outcome: str
    started_ms: int
    ended_ms: int
    cursor: int | None = None

    @classmethod
    def parse(cls, row: dict[str, Any]) -> RecordedCall:
        return cls(
            call=int(row["call"]),
            request=str(row["request"]),
            response=str(row["response"]),
            model=str(row.get("model") or ""),
            tokens_in=int(row.get("tokens_in") or 0),
            tokens_out=int(row.get("tokens_out") or 0),
            stream=bool(row.get("stream")),
            status=int(row.get("status") or 200),
            outcome=str(row.get("outcome") or "ok"),
            started_ms=int(row.get("started_ms") or 0),
            ended_ms=int(row.get("ended_ms") or 0),
            cursor=row["cursor"] if isinstance(row.get("cursor"), int) else None,
        )


def live_dir(realm_id: str) -> Path:
    """Where the gateway writes the realm's recording."""
    return layout.recording_dir(realm_id)


def archived_dir(realm_id: str) -> Path:
    return layout.archive_dir(realm_id) / FOLDER


def find(realm_id: str) -> Path | None:
    """The realm's recording folder (live, else archived), or None when it has none."""
    for folder in (live_dir(realm_id), archived_dir(realm_id)):
        if (folder / "calls").is_dir() and any((folder / "calls").glob("*.jsonl")):
            return folder
    return None


def blob_name(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def index_path(folder: Path, agent_id: str) -> Path:
    return folder / "calls" / f"{layout.check_id('agent id', agent_id)}.jsonl"


def blob_path(folder: Path, digest: str) -> Path:
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"not a blob name: {digest!r}")
    return folder / "blobs" / f"{digest}.json"


def agents(folder: Path) -> list[str]:
    return sorted(p.stem for p in (folder / "calls").glob("*.jsonl"))


def calls(folder: Path, agent_id: str) -> list[RecordedCall]:
    """The agent's recorded calls in order (a torn last line, from a crash, is skipped)."""
    path = index_path(folder, agent_id)
    if not path.is_file():
        return []
    out: list[RecordedCall] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(RecordedCall.parse(json.loads(line)))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def read_blob(folder: Path, digest: str) -> Any:
    """A blob's JSON (checked against its name: a blob edited by hand fails loudly)."""
    data = blob_path(folder, digest).read_bytes()
    if blob_name(data) != digest:
        raise ValueError(f"blob {digest[:12]}… does not match its content")
    return json.loads(data)


# One encoder for every call: ``json.dumps`` with options builds a new one each time.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Any) -> bytes:
    """The one byte form of a JSON value that names its blob."""
    return _CANONICAL.encode(value).encode()
