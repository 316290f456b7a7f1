"""Scenarios in the library, realms launched from them, and their agents."""

from __future__ import annotations

from django.db import models


class Scenario(models.Model):
    """A scenario package kept in the library, file for file."""

    class Source(models.TextChoices):
        EXAMPLE = "example", "example"
        USER = "user", "user"

    name = models.CharField(max_length=120)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.USER)
    title = models.CharField(max_length=120, blank=True, default="")
    origin = models.CharField(
        max_length=1024, blank=True, default="", help_text="where it was imported from"
    )
    content_sha256 = models.CharField(max_length=64, blank=True, default="")
    valid = models.BooleanField(default=False)
    validation = models.JSONField(default=dict, help_text="the last validation result")
    validated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["name", "source"], name="scenario_name_source")
        ]
        ordering = ("name", "source")

    def __str__(self) -> str:
        return f"{self.name} ({self.source})"


class ScenarioFile(models.Model):
    """One file of a scenario package, stored byte for byte."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="files")
    path = models.CharField(max_length=1024, help_text="relative, with forward slashes")
    content = models.BinaryField()
    mode = models.PositiveIntegerField(default=0o644)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scenario", "path"], name="scenario_file_path")
        ]
        ordering = ("path",)

    def __str__(self) -> str:
        return self.path


class Host(models.Model):
    """A worker host: it announces itself when its worker starts and beats while it runs.

    ``state``: ``reaping`` while a (re)started worker clears what it left behind,
    ``up`` once it takes realms, ``dead`` once a surviving host found its heartbeat
    older than ``BEARPIT_HOST_DEAD_AFTER`` and interrupted its realms."""

    class State(models.TextChoices):
        REAPING = "reaping", "reaping"
        UP = "up", "up"
        DEAD = "dead", "dead"

    host_id = models.CharField(max_length=80, primary_key=True)
    capacity = models.PositiveIntegerField(default=1, help_text="how many live realms it takes")
    backend = models.CharField(max_length=16, help_text="its sandbox backend")
    state = models.CharField(max_length=16, choices=State.choices, default=State.REAPING)
    last_heartbeat = models.DateTimeField()
    started_at = models.DateTimeField()
    dead_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("host_id",)

    def __str__(self) -> str:
        return self.host_id


class Realm(models.Model):
    """One run of a scenario."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        PROVISIONING = "provisioning", "provisioning"
        RUNNING = "running", "running"
        CONCLUDING = "concluding", "concluding"
        ARCHIVED = "archived", "archived"
        FAILED = "failed", "failed"
        INTERRUPTED = "interrupted", "interrupted"

    TERMINAL_STATES = (State.ARCHIVED, State.FAILED, State.INTERRUPTED)

    realm_id = models.CharField(max_length=80, unique=True)
    scenario = models.ForeignKey(
        Scenario, on_delete=models.SET_NULL, null=True, blank=True, related_name="realms"
    )
    package_name = models.CharField(max_length=120)
    package_path = models.CharField(max_length=1024, blank=True, default="")
    package_sha256 = models.CharField(max_length=64, blank=True, default="")
    project = models.JSONField(
        default=dict, help_text="the resolved, parameter-bound project snapshot"
    )
    parameters = models.JSONField(default=dict)
    run_config = models.JSONField(default=dict)
    provider = models.CharField(max_length=60, blank=True, default="")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    outcome = models.TextField(blank=True, default="")
    conclusion_reason = models.CharField(max_length=40, blank=True, default="")
    conclusion_detail = models.TextField(blank=True, default="")
    stop_requested = models.BooleanField(default=False)
    claimed_by = models.CharField(max_length=120, blank=True, default="")
    claimed_until = models.DateTimeField(null=True, blank=True)
    host = models.ForeignKey(
        Host,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="realms",
        help_text="the worker host holding its sandboxes (none in the embedded default)",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    concluded_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return self.realm_id

    @property
    def is_terminal(self) -> bool:
        return self.state in self.TERMINAL_STATES


class RealmAgent(models.Model):
    """An agent of a realm: its place in the roster and what it was resolved to."""

    class Role(models.TextChoices):
        PARTICIPANT = "participant", "participant"
        REFEREE = "referee", "referee"

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        RUNNING = "running", "running"
        STOPPED = "stopped", "stopped"
        ELIMINATED = "eliminated", "eliminated"
        KILLED = "killed", "killed"
        FAILED = "failed", "failed"

    realm = models.ForeignKey(Realm, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.CharField(max_length=64)
    position = models.PositiveIntegerField(help_text="roster order: sorted folder names")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.PARTICIPANT)
    name = models.CharField(max_length=100, blank=True, default="")
    model = models.CharField(max_length=120, blank=True, default="")
    provider = models.CharField(max_length=60, blank=True, default="")
    budget_usd = models.DecimalField(max_digits=16, decimal_places=8, null=True, blank=True)
    on_exhausted = models.CharField(max_length=20, default="starve")
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    matrix_user_id = models.CharField(max_length=255, blank=True, default="")
    sandbox_id = models.CharField(max_length=255, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["realm", "agent_id"], name="realm_agent_id")]
        ordering = ("realm", "position")

    def __str__(self) -> str:
        return f"{self.realm.realm_id}/{self.agent_id}"


class Batch(models.Model):
    """N realms of one package run as one experiment, and the realm each run became.

    ``runs`` is the plan, one entry per run in order: ``{"index", "parameters",
    "realm_id", "replaced"}``; ``realm_id`` is set the moment the run's realm is launched,
    so a batch killed mid-run resumes with it, and ``replaced`` keeps the realms a resume
    superseded (interrupted before they ended)."""

    class State(models.TextChoices):
        RUNNING = "running", "running"
        FINISHED = "finished", "finished"

    batch_id = models.CharField(max_length=80, unique=True)
    package_name = models.CharField(max_length=120)
    package_path = models.CharField(max_length=1024)
    count = models.PositiveIntegerField()
    concurrency = models.PositiveIntegerField(default=1)
    parameters = models.JSONField(default=dict, help_text="values every run shares")
    grid = models.JSONField(default=dict, help_text="name → values the runs cycle through")
    provider = models.CharField(max_length=60, blank=True, default="")
    intended = models.JSONField(default=list, help_text="termination kinds that count as k")
    runs = models.JSONField(default=list)
    state = models.CharField(max_length=16, choices=State.choices, default=State.RUNNING)
    background = models.BooleanField(
        default=False,
        help_text="driven by the server (pit_serve, Celery beat), not by a pit_batch process",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return self.batch_id
