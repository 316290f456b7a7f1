"""The embedded homeserver, live: the per-event upkeep it skips stays skipped, and the work it
schedules still runs to its end (realms/herald/config.py, delayedevents.py, sqliteinline.py)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator

import pytest

from chronicle.models import Message
from realms.herald.bus import BusAgent, provision_bus
from tests.fixtures.homeserver import LiveHomeserver
from tests.realms.herald.conftest import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture
def synapse_db(homeserver: LiveHomeserver) -> Iterator[sqlite3.Connection]:
    """The homeserver's own database, read-only, beside the homeserver that writes it."""
    path = homeserver.config.data_dir / "synapse.sqlite3"
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    yield conn
    conn.close()


def _one(db: sqlite3.Connection, sql: str, *args: object) -> int:
    row = db.execute(sql, args).fetchone()
    assert row is not None, sql
    return int(row[0])


def test_each_task_scheduled_for_a_new_agent_runs_to_its_end(homeserver, realm_id, synapse_db):
    # Every display name the platform sets schedules a task that updates the user's
    # memberships; more agents than the scheduler runs at once (five).
    bus = provision_bus(
        realm_id,
        [BusAgent(f"a{i}") for i in range(8)],
        turns=False,
        allow_side_channels=False,
    )
    users = sorted(bus.users.values())
    sql = "SELECT resource_id, status FROM scheduled_tasks WHERE action = 'update_join_states'"

    def statuses() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for user, status in synapse_db.execute(sql):
            if user in users:
                found.setdefault(user, set()).add(status)
        return found

    wait_for(
        lambda: statuses() == {u: {"complete"} for u in users},
        timeout=30,
        what="every new agent's membership task complete",
    )


def test_a_message_leaves_the_federation_and_delayed_event_positions_alone(
    homeserver, platform_server, small_bus, agent_client, synapse_db
):
    federation_sql = "SELECT MAX(stream_id) FROM federation_stream_position WHERE type = 'events'"
    delayed_sql = "SELECT stream_id FROM delayed_events_stream_pos"
    alice = agent_client(small_bus.realm_id, "alice")
    response = alice.send(small_bus.commons_room_id, "first")
    assert response.status_code == 200, response.text
    event_id = response.json()["event_id"]
    wait_for(
        lambda: Message.objects.filter(matrix_event_id=event_id).exists(),
        what="the message mirrored",
    )
    ordering = _one(synapse_db, "SELECT stream_ordering FROM events WHERE event_id = ?", event_id)
    # Both jobs, when they run, move their position to the newest event within
    # milliseconds of it being persisted; give them far longer than that.
    time.sleep(1.0)
    assert _one(synapse_db, federation_sql) < ordering
    assert _one(synapse_db, delayed_sql) < ordering
