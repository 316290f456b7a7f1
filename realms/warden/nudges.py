"""Stall nudges: a prompt into the Commons when a realm has stopped moving.

Progress is any change in the agents' message count, the shared folder, or spend.
After ``NUDGE_AFTER_S`` without progress (counted from the last nudge too) the realm is
nudged, at most ``MAX_NUDGES`` times. With a driving referee only the referee is
nudged, in generic words, so the platform never steers the players itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import transaction

from chronicle import selectors
from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.warden.snapshot import LiveSnapshot

NUDGE_AFTER_S = 150.0
MAX_NUDGES = 4

REALM_TEXT = (
    "Nothing has moved in the realm for a while. Check the goals and the conversation "
    "so far, then take your next step."
)
REFEREE_TEXT = "Nothing has moved in the realm for a while. Decide what happens next and post it."

Post = Callable[[str, list[str]], object]
"""``post(text, mentions)``: announce ``text`` in the Commons, @mentioning agent ids."""


@dataclass(frozen=True)
class Nudge:
    number: int
    text: str
    mentions: tuple[str, ...]
    referee_only: bool


def nudge_times(realm_id: str) -> list[int]:
    """When the realm was nudged, oldest first (SYSTEM ``nudge`` events)."""
    return list(
        selectors.events(realm_id, Kind.SYSTEM)
        .filter(payload__event="nudge")
        .values_list("ts_ms", flat=True)
    )


def plan_nudge(
    snapshot: LiveSnapshot, sent_ms: Sequence[int], *, enabled: bool = True
) -> Nudge | None:
    """The nudge due at this tick, if any; ``sent_ms`` are the earlier nudges' times."""
    if not enabled or len(sent_ms) >= MAX_NUDGES:
        return None
    quiet_since = max([snapshot.last_progress_ms, *sent_ms])
    if snapshot.now_ms - quiet_since < NUDGE_AFTER_S * 1000:
        return None
    referee = snapshot.referee
    if snapshot.referee_drives and referee is not None and not snapshot.agents[referee].stopped:
        return Nudge(len(sent_ms) + 1, REFEREE_TEXT, (referee,), referee_only=True)
    live = tuple(a.agent_id for a in snapshot.agents.values() if not a.stopped)
    if not live:
        return None
    return Nudge(len(sent_ms) + 1, REALM_TEXT, live, referee_only=False)


def send_nudge(realm_id: str, nudge: Nudge, post: Post, *, ts_ms: int | None = None) -> None:
    """Post the nudge, then chronicle it; a post that fails is not counted."""
    post(nudge.text, list(nudge.mentions))
    with transaction.atomic():
        record_event(
            realm_id,
            Kind.SYSTEM,
            {"event": "nudge", "n": nudge.number, "to": list(nudge.mentions)},
            ts_ms=ts_ms,
        )


def nudge_if_stalled(snapshot: LiveSnapshot, *, post: Post, enabled: bool = True) -> Nudge | None:
    """One tick's nudge step: plan from the Chronicle, post and record it when due."""
    nudge = plan_nudge(snapshot, nudge_times(snapshot.realm_id), enabled=enabled)
    if nudge is not None:
        # stamped with the tick's clock, which the next tick's spacing is measured on
        send_nudge(snapshot.realm_id, nudge, post, ts_ms=snapshot.now_ms)
    return nudge
