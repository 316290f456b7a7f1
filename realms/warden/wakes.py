"""The Warden's part in schedules and background jobs: fire, deliver, acknowledge.

Each tick fires the schedules that fell due (``schedules_wakes.fire_due``), marks the
wakes the agents' runtimes have read, and posts every wake owed now: a system post in
the Commons mentioning the agent alone, as the machine's wakes are. A post that fails
is not recorded, so the next tick posts it again; a post whose record a crash lost is
posted again too: delivery is at least once. None of it counts as activity for the
stall rule (``snapshot.build_snapshot`` reads no ``wake`` event).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from chronicle.selectors import agents_out
from realms.herald import posting
from realms.herald.matrix import MatrixError
from realms.plan import RealmPlan
from realms.realmtools.jobs import commons_gated
from realms.realmtools.schedules_wakes import acknowledge, delivered, fire_due, to_deliver

log = logging.getLogger(__name__)

Post = Callable[[str, str, Sequence[str]], str]
"""``post(realm_id, text, mentions)`` → the Matrix event id of the post."""


def drive_wakes(realm_id: str, plan: RealmPlan, now: int, *, post: Post = posting.announce) -> int:
    """One tick's schedules and wakes; how many wakes were posted."""
    if plan.schedules is None and plan.jobs is None:
        return 0
    if plan.schedules is not None:
        fire_due(realm_id, private=commons_gated(plan), now=now)
    acknowledge(realm_id, now=now)
    posted = 0
    for due in to_deliver(realm_id, agents_out(realm_id), now=now):
        text = f"@{due.agent_id} — {due.text}"
        if due.delivery > 1:
            text += f" (delivery {due.delivery}: not read yet)"
        try:
            event_id = post(realm_id, text, [due.agent_id])
        except (MatrixError, OSError) as exc:
            log.info("posting a wake of %s/%s failed: %s", realm_id, due.agent_id, exc)
            continue
        delivered(realm_id, due, event_id, now=now)
        posted += 1
    return posted
