"""Leases on claimed tasks: renewed by the claimant's work, expired by the Warden.

Any realmtools call by a claimant renews its leases (``renew``, from the dispatcher), and
so does anything it says on the bus: the Warden, before it expires a lease, looks for a
message by the claimant since the lease was last renewed. Renewals are not chronicled
(they would be one event per tool call); an expiry is.
"""

from __future__ import annotations

from django.db import transaction

from chronicle.kinds import Kind
from chronicle.models import Message, now_ms
from chronicle.services import record_event
from realms.models import Realm
from realms.plan import TaskBoardPlan, plan_of
from realms.realmtools import worktrees
from realms.realmtools.models import Task


def renew(realm_id: str, agent_id: str, board: TaskBoardPlan, now: int | None = None) -> int:
    """Push back the leases of every task ``agent_id`` holds; how many."""
    until = (now or now_ms()) + round(board.lease_s * 1000)
    # By the realm's key, not a join: an UPDATE through a join is a subquery, which could
    # renew a task another transaction just released.
    realm_pk = Realm.objects.filter(realm_id=realm_id).values_list("pk", flat=True).first()
    if realm_pk is None:
        return 0
    return Task.objects.filter(
        realm_id=realm_pk, state=Task.State.CLAIMED, claimant=agent_id
    ).update(lease_until_ms=until)


def _last_said(realm_id: str, agent_id: str, after_ms: int) -> int | None:
    return (
        Message.objects.filter(realm_id=realm_id, sender_agent=agent_id, ts_ms__gt=after_ms)
        .order_by("-ts_ms")
        .values_list("ts_ms", flat=True)
        .first()
    )


def expire_leases(realm_id: str, board: TaskBoardPlan, now: int | None = None) -> list[int]:
    """Return every task whose lease ran out to the pool; the numbers returned.

    Each expiry is a conditional update on the lease it saw, so a claimant who renews or
    completes at the same moment keeps its task and nothing is expired twice.
    """
    at = now or now_ms()
    lease_ms = round(board.lease_s * 1000)
    stale = Task.objects.filter(
        realm__realm_id=realm_id, state=Task.State.CLAIMED, lease_until_ms__lt=at
    ).order_by("number")
    expired: list[int] = []
    for task in stale:
        seen = task.lease_until_ms or 0
        mine = Task.objects.filter(
            pk=task.pk, state=Task.State.CLAIMED, claimant=task.claimant, lease_until_ms=seen
        )
        said = _last_said(realm_id, task.claimant, seen - lease_ms)
        if said is not None and said + lease_ms > at:
            mine.update(lease_until_ms=said + lease_ms)
            continue
        with transaction.atomic():
            if mine.update(state=Task.State.OPEN, claimant="", lease_until_ms=None) != 1:
                continue
            record_event(
                realm_id,
                Kind.TASK,
                {
                    "op": "expire",
                    "task": task.number,
                    "agent": None,
                    "claimant": task.claimant,
                    "lease_s": board.lease_s,
                },
            )
        expired.append(task.number)
        if board.worktrees:
            roster = plan_of(Realm.objects.get(realm_id=realm_id)).roster
            worktrees.on_release(
                realm_id, board, task.number, task.claimant, by=None, reason="expire", roster=roster
            )
    return expired
