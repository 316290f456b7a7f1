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


# -- schedules, background jobs and the wakes they send ---------------------------------


class Schedule(models.Model):
    """A wake an agent asked for: once ``after`` a delay, ``every`` interval, or on a cron.

    ``next_fire_ms`` is when the Warden next turns it into a :class:`Wake`; firing and
    advancing it happen in one transaction, so a schedule fires once per due time however
    often the Warden restarts.
    """

    class Kind(models.TextChoices):
        AFTER = "after"
        EVERY = "every"
        CRON = "cron"

    class State(models.TextChoices):
        ACTIVE = "active"
        DONE = "done"
        CANCELLED = "cancelled"

    realm = models.ForeignKey("realms.Realm", on_delete=models.CASCADE, related_name="schedules")
    number = models.PositiveIntegerField(help_text="the schedule's id within its realm, from 1")
    agent_id = models.CharField(max_length=64)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    spec = models.CharField(max_length=100, help_text="the delay, interval or cron as given")
    every_s = models.FloatField(null=True, blank=True)
    note = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.ACTIVE)
    next_fire_ms = models.BigIntegerField(null=True, blank=True)
    fired = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="fires while a wake was pending")
    last_fired_ms = models.BigIntegerField(null=True, blank=True)
    created_ms = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["realm", "number"], name="schedule_number_per_realm")
        ]
        indexes = [models.Index(fields=["state", "next_fire_ms"])]

    def __str__(self) -> str:
        return f"schedule {self.number} of {self.agent_id} in realm {self.realm_id}"


class Job(models.Model):
    """A ``run_code`` running in the background; its row is the job's whole state."""

    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        TIMED_OUT = "timed_out"
        KILLED = "killed"
        LOST = "lost"

    realm = models.ForeignKey("realms.Realm", on_delete=models.CASCADE, related_name="jobs")
    number = models.PositiveIntegerField(help_text="the job's id within its realm, from 1")
    agent_id = models.CharField(max_length=64)
    exec_id = models.CharField(max_length=32, help_text="the exec event's id")
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    exit_code = models.IntegerField(null=True, blank=True)
    output = models.TextField(blank=True, default="")
    kill_requested = models.BooleanField(default=False)
    runner = models.CharField(max_length=200, help_text="host:pid:start of the process running it")
    started_ms = models.BigIntegerField()
    ended_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["realm", "number"], name="job_number_per_realm")
        ]
        indexes = [models.Index(fields=["realm", "agent_id", "state"])]

    def __str__(self) -> str:
        return f"job {self.number} of {self.agent_id} in realm {self.realm_id}"


class Wake(models.Model):
    """A notice owed to one agent: a schedule fell due, or a background job ended.

    It stays ``pending`` until the agent's runtime acknowledges it (its trace shows a
    model call that read it); the Warden re-delivers it until then, a bounded number of
    times.
    """

    class Source(models.TextChoices):
        SCHEDULE = "schedule"
        JOB = "job"

    class State(models.TextChoices):
        PENDING = "pending"
        ACKED = "acked"
        GAVE_UP = "gave_up"

    realm = models.ForeignKey("realms.Realm", on_delete=models.CASCADE, related_name="wakes")
    agent_id = models.CharField(max_length=64)
    source = models.CharField(max_length=16, choices=Source.choices)
    ref = models.PositiveIntegerField(help_text="the schedule's or the job's number")
    due_ms = models.BigIntegerField()
    text = models.TextField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    deliveries = models.PositiveIntegerField(default=0)
    delivered_ms = models.BigIntegerField(null=True, blank=True)
    event_ids = models.JSONField(default=list, help_text="Matrix ids of the posts delivering it")
    trace_floor = models.BigIntegerField(default=0, help_text="trace events before it: not acks")
    acked_ms = models.BigIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["realm", "source", "ref", "due_ms"], name="one_wake_per_due_time"
            )
        ]
        indexes = [models.Index(fields=["realm", "state"])]

    def __str__(self) -> str:
        return f"wake of {self.agent_id} ({self.source} {self.ref}) in realm {self.realm_id}"
