"""Models of the realmtools: the task board's tasks.

A task row is the board's current state; every change to it is also a ``task`` event in
the Chronicle, written in the same transaction, so the record and the board never differ.
Claims are taken with a conditional UPDATE on the row's state, so exactly one claimant
wins however many ask at once.
"""

from __future__ import annotations

from django.db import models


class Task(models.Model):
    class State(models.TextChoices):
        OPEN = "open"
        CLAIMED = "claimed"
        BLOCKED = "blocked"
        DONE = "done"

    realm = models.ForeignKey("realms.Realm", on_delete=models.CASCADE, related_name="tasks")
    number = models.PositiveIntegerField(help_text="the task's id within its realm, from 1")
    title = models.CharField(max_length=200)
    detail = models.TextField(blank=True, default="")
    depends_on = models.JSONField(default=list, help_text="numbers of tasks that must be done")
    assignee = models.CharField(max_length=64, blank=True, default="")
    state = models.CharField(max_length=16, choices=State.choices, default=State.OPEN)
    claimant = models.CharField(max_length=64, blank=True, default="")
    lease_until_ms = models.BigIntegerField(null=True, blank=True)
    summary = models.TextField(blank=True, default="")
    block_reason = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=64)
    created_ms = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["realm", "number"], name="task_number_per_realm")
        ]
        indexes = [models.Index(fields=["realm", "state"])]

    def __str__(self) -> str:
        return f"task {self.number} of realm {self.realm_id}: {self.title}"
