"""Pulling each agent's runtime trace (JSONL in its home) into the Chronicle.

The trace format and what is kept belong to ``chronicle.traces.ingest_trace``; this
module only knows where each agent's trace file lives and calls it for every agent.
Ingestion resumes where it stopped, so calling it every few ticks is cheap.
"""

from __future__ import annotations

import logging
from pathlib import Path

from chronicle.traces import ingest_trace
from realms.forge import layout
from realms.models import RealmAgent

log = logging.getLogger(__name__)

TRACE_RELATIVE = Path(".bearpit") / "trace.jsonl"
MAX_ROUNDS = 50


def trace_file(realm_id: str, agent_id: str) -> Path:
    return layout.home_dir(realm_id, agent_id) / TRACE_RELATIVE


def ingest_all(realm_id: str, *, drain: bool = False) -> int:
    """Ingest new trace records of every agent; returns how many events were added.

    ``drain`` keeps reading until each trace is exhausted (at conclusion, before the
    homes are released); otherwise one bounded batch per agent per call.
    """
    added = 0
    for agent_id in RealmAgent.objects.filter(realm__realm_id=realm_id).values_list(
        "agent_id", flat=True
    ):
        path = trace_file(realm_id, agent_id)
        for _ in range(MAX_ROUNDS if drain else 1):
            try:
                got = ingest_trace(realm_id, agent_id, path)
            except PermissionError:
                log.info("trace of %s/%s is not readable", realm_id, agent_id)
                break
            added += got
            if not got:
                break
    return added
