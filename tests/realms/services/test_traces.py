"""Pulling every agent's runtime trace from its home into the Chronicle."""

from __future__ import annotations

from typing import Any

import pytest

from chronicle.models import Event
from chronicle.traces import MAX_EVENTS_PER_CALL
from realms.services.traces import ingest_all, trace_file
from runtime.trace import Redactor, TraceWriter
from tests.fixtures.realms import RealmBuilder

pytestmark = pytest.mark.django_db


def writer(realm_id: str, agent_id: str) -> TraceWriter:
    path = trace_file(realm_id, agent_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    return TraceWriter(path, f"run-{agent_id}", agent_id, Redactor([]))


def traced(realm_id: str) -> list[tuple[Any, Any]]:
    rows = Event.objects.filter(realm_id=realm_id, kind="trace").order_by("id")
    return [(e.payload["agent_id"], e.payload["type"]) for e in rows]


def test_every_agents_trace_is_ingested_once(realm_builder: RealmBuilder) -> None:
    realm = realm_builder(agents=[{"id": "ping"}, {"id": "pong"}, {"id": "quiet"}])
    rid = realm.realm_id
    ping, pong = writer(rid, "ping"), writer(rid, "pong")
    ping.emit("run_start", version="0.1.0")
    pong.emit("run_start", version="0.1.0")
    pong.emit("wake", source=["message"])
    # quiet has written no trace yet: that is no error
    assert ingest_all(rid) == 3
    assert ingest_all(rid) == 0
    ping.emit("wake", source=["message"])
    assert ingest_all(rid) == 1
    assert sorted(traced(rid)) == [
        ("ping", "run_start"),
        ("ping", "wake"),
        ("pong", "run_start"),
        ("pong", "wake"),
    ]


def test_a_drain_reads_past_one_batch(realm_builder: RealmBuilder) -> None:
    rid = realm_builder(agents=[{"id": "ping"}]).realm_id
    ping = writer(rid, "ping")
    for n in range(MAX_EVENTS_PER_CALL + 5):
        ping.emit("step", n=n)
    assert ingest_all(rid) == MAX_EVENTS_PER_CALL  # one batch per agent and call
    for n in range(MAX_EVENTS_PER_CALL):
        ping.emit("step", n=n)
    assert ingest_all(rid, drain=True) == MAX_EVENTS_PER_CALL + 5
    assert len(traced(rid)) == 2 * MAX_EVENTS_PER_CALL + 5
