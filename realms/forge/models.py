"""Models of the forge: one row per agent sandbox."""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class Sandbox(models.Model):
    """An agent's sandbox: which backend runs it, as which host uid, and how to find it
    again after a worker restart (pid + the pid's start time, or a container ref)."""

    class State(models.TextChoices):
        STARTING = "starting", "starting"
        RUNNING = "running", "running"
        STOPPING = "stopping", "stopping"
        STOPPED = "stopped", "stopped"
        FAILED = "failed", "failed"

    LIVE_STATES = (State.STARTING, State.RUNNING, State.STOPPING)

    realm_id = models.CharField(max_length=80, db_index=True)
    agent_id = models.CharField(max_length=80)
    backend = models.CharField(max_length=16)
    host_uid = models.PositiveIntegerField(help_text="the agent's own host uid")
    host_gid = models.PositiveIntegerField(help_text="the realm's group: shares the folder")
    shared = models.BooleanField(default=False)
    egress = models.CharField(max_length=16, default="model_only")
    limits = models.JSONField(default=dict, help_text="the caps it was started with")
    pid = models.PositiveIntegerField(null=True, blank=True)
    pid_start_time = models.BigIntegerField(
        null=True, blank=True, help_text="clock ticks since boot; tells a recycled pid apart"
    )
    ref = models.CharField(max_length=128, blank=True, default="", help_text="container id")
    state = models.CharField(max_length=16, choices=State.choices, default=State.STARTING)
    started_at = models.DateTimeField(null=True, blank=True)
    stopped_at = models.DateTimeField(null=True, blank=True)
    stop_reason = models.CharField(max_length=200, blank=True, default="")
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["realm_id", "agent_id"],
                condition=Q(state__in=["starting", "running", "stopping"]),
                name="forge_one_live_sandbox_per_agent",
            ),
            models.UniqueConstraint(
                fields=["host_uid"],
                condition=Q(state__in=["starting", "running", "stopping"]),
                name="forge_live_uid_unique",
            ),
        ]
        ordering = ("realm_id", "agent_id", "-created_at")

    def __str__(self) -> str:
        return f"{self.realm_id}/{self.agent_id} ({self.backend}, {self.state})"
