"""The delayed-events job after each event is skipped only while none can exist
(realms/herald/delayedevents.py; the live homeserver: test_upkeep.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from synapse.handlers.delayed_events import DelayedEventsHandler

from realms.herald.delayedevents import DelayedEventsIdle

pytestmark = pytest.mark.timeout(30)


class Store:
    """The three calls of Synapse's store the job makes when nothing is scheduled."""

    def __init__(self, counts: list[int]) -> None:
        self.counts = counts
        self.positions: list[int] = []

    def get_room_max_stream_ordering(self) -> int:
        return 42

    async def get_count_of_delayed_events(self) -> int:
        return self.counts.pop(0)

    async def update_delayed_events_stream_pos(self, stream_id: int) -> None:
        self.positions.append(stream_id)


def _handler(*, enabled: bool, counts: list[int]) -> Any:
    """What Synapse's handler holds, as far as the job reads it."""
    launched: list[str] = []
    hs = SimpleNamespace(run_as_background_process=lambda name, *a: launched.append(name))
    return SimpleNamespace(
        hs=hs,
        launched=launched,
        server_name="t.local",
        _store=Store(counts),
        _config=SimpleNamespace(server=SimpleNamespace(msc4140_enabled=enabled)),
        _event_pos=None,
        _event_processing=False,
    )


async def _start(handler: Any) -> None:
    """What the homeserver does at start-up: run the job once, then wait for events."""
    DelayedEventsIdle.parse_config({})
    await DelayedEventsHandler._unsafe_process_new_event(handler)
    assert handler._store.positions == [42]  # Synapse's own job ran


async def test_with_delayed_events_off_and_none_stored_later_events_run_nothing() -> None:
    handler = _handler(enabled=False, counts=[0, 0])
    await _start(handler)
    DelayedEventsHandler.notify_new_event(handler)
    DelayedEventsHandler.notify_new_event(handler)
    assert handler.launched == []


async def test_with_delayed_events_on_every_event_runs_the_job() -> None:
    handler = _handler(enabled=True, counts=[0])
    await _start(handler)
    DelayedEventsHandler.notify_new_event(handler)
    assert handler.launched == ["delayed_events.notify_new_event"]


async def test_with_one_still_stored_every_event_runs_the_job() -> None:
    handler = _handler(enabled=False, counts=[0, 1])  # one appears as the job ends
    await _start(handler)
    DelayedEventsHandler.notify_new_event(handler)
    assert handler.launched == ["delayed_events.notify_new_event"]
