"""No delayed-events upkeep after every event while delayed events are off: a Synapse module.

Synapse's delayed events (MSC4140) let a client schedule a message for later; a scheduled
state event is cancelled when someone else sets the same state first. To notice that, the
homeserver runs a job after *every* persisted event: it counts the scheduled events with a
database query and, finding none, writes its stream position back with a second
transaction. Flat out that job was ~7 % of the homeserver's time (``bench/bus.py``, py-spy).

The generated config never enables delayed events (no ``max_event_delay_duration``), and
while they are off the homeserver refuses to schedule one, so once the job has run at
start-up and found none, none can appear before the next start (turning them on is a
config change, hence a restart, which runs the job again). From then on the job after each
event is skipped. With delayed events on, or any still stored, nothing changes.

Synapse imports this module in its own process: it must not import Django.
"""

from __future__ import annotations

from synapse.handlers.delayed_events import DelayedEventsHandler

from realms.herald.patchmodule import ConfigTimePatch

APPLIED = "_bearpit_idle_when_off"
# Set on a handler once it knows no delayed event can exist until the next start.
NOTHING_TO_CANCEL = "_bearpit_nothing_to_cancel"


def apply() -> None:
    """Skip the per-event job once it is known to have nothing to do."""
    if getattr(DelayedEventsHandler, APPLIED, False):
        return
    process = DelayedEventsHandler._unsafe_process_new_event
    notify = DelayedEventsHandler.notify_new_event

    async def _unsafe_process_new_event(self: DelayedEventsHandler) -> None:
        await process(self)
        if self._config.server.msc4140_enabled or getattr(self, NOTHING_TO_CANCEL, False):
            return
        if await self._store.get_count_of_delayed_events() == 0:
            setattr(self, NOTHING_TO_CANCEL, True)

    def notify_new_event(self: DelayedEventsHandler) -> None:
        if getattr(self, NOTHING_TO_CANCEL, False):
            return
        notify(self)

    DelayedEventsHandler._unsafe_process_new_event = _unsafe_process_new_event  # type: ignore[method-assign]
    DelayedEventsHandler.notify_new_event = notify_new_event  # type: ignore[method-assign]
    setattr(DelayedEventsHandler, APPLIED, True)


class DelayedEventsIdle(ConfigTimePatch):
    """The module Synapse loads."""

    patch = staticmethod(apply)
