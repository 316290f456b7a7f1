"""Models of the warden: the per-realm state a restarted worker resumes from."""

from __future__ import annotations

from typing import Any

from django.db import models


def _empty() -> dict[str, Any]:
    return {}


class WardenState(models.Model):
    """What the Warden remembers between ticks of one realm.

    Everything here can be rebuilt from the Chronicle in principle, but keeping it
    on one row makes a tick cheap and lets a worker that restarts mid-realm carry on
    exactly where the last one stopped: the turn rotation, the DM quotas, how far the
    event and message streams have been consumed, and the floor moves still to make.
    """

    realm = models.OneToOneField("realms.Realm", on_delete=models.CASCADE, related_name="warden")
    turns = models.JSONField(default=_empty, help_text="TurnManager state; {} when no turns")
    dms = models.JSONField(default=_empty, help_text="DM delivery counters and notices sent")
    cursors = models.JSONField(
        default=_empty, help_text="last consumed Message and Event ids, per stream"
    )
    stopped_agents = models.JSONField(
        default=list, help_text="agents whose sandbox the Warden stopped (eliminated or killed)"
    )
    outbox = models.JSONField(
        default=list,
        help_text="floor moves already chronicled, not yet made on the bus (realms.warden.outbox)",
    )
    watch_started_ms = models.BigIntegerField(null=True, blank=True)
    kicked_off = models.BooleanField(default=False)
    ticks = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0, help_text="consecutive failed ticks")
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"warden state of realm {self.realm_id}"
