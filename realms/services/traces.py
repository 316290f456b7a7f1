"""Pulling each agent's runtime trace (JSONL in its home) into the Chronicle.

The trace format and what is kept belong to ``chronicle.traces.ingest_trace``; this
module only knows where each agent's trace file lives and calls it for every agent.
Ingestion resumes where it stopped, so calling it every few ticks is cheap.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from realms.forge import layout
from realms.models import RealmAgent

log = logging.getLogger(__name__)

TRACE_RELATIVE = Path(".bearpit") / "trace.jsonl"


def trace_file(realm_id: str, agent_id: str) -> Path:
    return layout.home_dir(realm_id, agent_id) / TRACE_RELATIVE


def _ingester() -> Callable[..., Any] | None:
    try:
        module = importlib.import_module("chronicle.traces")
    except ImportError:
        return None
    found = getattr(module, "ingest_trace", None)
    return found if callable(found) else None


def ingest_all(realm_id: str) -> int:
    """Ingest every agent's trace; returns how many agents had a trace file."""
    ingest = _ingester()
    if ingest is None:
        return 0
    count = 0
    for agent_id in RealmAgent.objects.filter(realm__realm_id=realm_id).values_list(
        "agent_id", flat=True
    ):
        path = trace_file(realm_id, agent_id)
        if not path.is_file():
            continue
        try:
            ingest(realm_id, agent_id, path)
        except PermissionError:
            log.info("trace of %s/%s is not readable yet", realm_id, agent_id)
            continue
        count += 1
    return count
