"""Scribe's rows: authoring sessions, the versioned draft of each, and a history per scenario.

A draft version holds every file of the package as text, so a page reload (or a second
terminal) resumes the session exactly, and approval saves one complete tree.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ScribeSession(models.Model):
    class Mode(models.TextChoices):
        CREATE = "create", "create"
        EDIT = "edit", "edit"

    class State(models.TextChoices):
        OPEN = "open", "open"
        PROPOSED = "proposed", "proposed"
        APPROVED = "approved", "approved"
        CAPPED = "capped", "capped"

    session_id = models.CharField(max_length=32, unique=True)
    mode = models.CharField(max_length=8, choices=Mode.choices)
    scenario = models.CharField(
        max_length=120, blank=True, default="", help_text="the library name the draft saves as"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    # The conversation as the model sees it (OpenAI chat messages, system prompt excluded).
    messages = models.JSONField(default=list)
    # The conversation as the user saw it: their messages and every streamed line
    # ({kind, text, name}, ``done`` left out), so a page rebuilds it after a reload.
    transcript = models.JSONField(default=list)
    # Who opened it in the console; none for a session opened with the operator token.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="scribe_sessions",
    )
    key_id = models.BigIntegerField(null=True, blank=True, help_text="Scribe's virtual key")
    # The key's secret, encrypted with the keystore's key: a later message calls with it.
    key_secret = models.BinaryField(blank=True, default=b"", editable=False)
    provider = models.CharField(max_length=60, blank=True, default="")
    model = models.CharField(max_length=200, blank=True, default="")
    proposed_version = models.PositiveIntegerField(
        null=True, blank=True, help_text="the draft version the user is asked to approve"
    )
    failed_proposals = models.PositiveIntegerField(default=0)
    # Set while a reply runs, so a second message waits for it instead of interleaving.
    replying_since = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-created_at",)

    def __str__(self) -> str:
        return f"{self.session_id} ({self.mode} {self.scenario or '?'})"


class DraftVersion(models.Model):
    """One complete state of the draft; every write makes a new version."""

    session = models.ForeignKey(ScribeSession, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    files = models.JSONField(default=dict, help_text="relative path → text")
    note = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("session", "number")
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="scribe_draft_version")
        ]

    def __str__(self) -> str:
        return f"{self.session.session_id} v{self.number}"


class HistoryEntry(models.Model):
    """One line of what was said about a scenario, across its sessions."""

    scenario = models.CharField(max_length=120, db_index=True)
    session = models.ForeignKey(
        ScribeSession, on_delete=models.SET_NULL, null=True, blank=True, related_name="history"
    )
    kind = models.CharField(max_length=16, help_text="user, text, question, draft, summary, …")
    name = models.CharField(max_length=120, blank=True, default="")
    text = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("scenario", "id")

    def __str__(self) -> str:
        return f"{self.scenario}: {self.kind}"
