"""Models of the herald: each realm's bus — its users, their tokens, its rooms."""

from __future__ import annotations

from django.db import models


class BusRealm(models.Model):
    """The bus of one realm."""

    realm_id = models.CharField(max_length=80, unique=True)
    system_user_id = models.CharField(max_length=255)
    operator_user_id = models.CharField(max_length=255)
    commons_room_id = models.CharField(max_length=255, blank=True, default="")
    turns = models.BooleanField(default=False)
    allow_side_channels = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"bus of {self.realm_id}"


class BusUser(models.Model):
    """An agent's Matrix identity; the token is encrypted at rest (never logged)."""

    bus = models.ForeignKey(BusRealm, on_delete=models.CASCADE, related_name="users")
    agent_id = models.CharField(max_length=64)
    role = models.CharField(max_length=16, default="participant")
    user_id = models.CharField(max_length=255, unique=True)
    device_id = models.CharField(max_length=64, blank=True, default="")
    token_encrypted = models.TextField(blank=True, default="")
    position = models.PositiveIntegerField(default=0)
    deactivated = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["bus", "agent_id"], name="bus_user_agent"),
        ]
        ordering = ("bus", "position")

    def __str__(self) -> str:
        return self.user_id


class BusRoom(models.Model):
    """A room of a realm: the Commons or the DM room of one permitted pair."""

    class Kind(models.TextChoices):
        COMMONS = "commons", "commons"
        DM = "dm", "dm"

    bus = models.ForeignKey(BusRealm, on_delete=models.CASCADE, related_name="rooms")
    room_id = models.CharField(max_length=255, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    label = models.CharField(max_length=200, blank=True, default="")
    agent_a = models.CharField(max_length=64, blank=True, default="")
    agent_b = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["bus", "agent_a", "agent_b"],
                condition=models.Q(kind="dm"),
                name="bus_room_dm_pair",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.label or self.room_id}"
