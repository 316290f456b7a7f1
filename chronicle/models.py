"""The Chronicle: append-only events and messages of every realm.

Rows are written once and never changed. The ORM refuses updates, deletes and upserts
(``AppendOnlyQuerySet``, ``AppendOnlyModel``); on PostgreSQL and on SQLite triggers
refuse them too (migrations 0002 and 0003, :mod:`chronicle.guard`), so even raw SQL
cannot rewrite history.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar, NoReturn

from django.db import models


class AppendOnlyError(Exception):
    """Raised when code tries to change or remove a chronicled row."""


class AppendOnlyQuerySet(models.QuerySet[Any]):
    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only; update refused")

    def delete(self) -> NoReturn:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only; delete refused")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError(f"{self.model.__name__} rows are append-only; update refused")

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> list[Any]:
        # An upsert rewrites the row it collides with; ignore_conflicts only skips it.
        if kwargs.get("update_conflicts"):
            raise AppendOnlyError(f"{self.model.__name__} rows are append-only; upsert refused")
        return super().bulk_create(objs, *args, **kwargs)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class AppendOnlyModel(models.Model):
    objects: ClassVar[models.Manager[Any]] = models.Manager.from_queryset(AppendOnlyQuerySet)()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding or kwargs.get("force_update") or kwargs.get("update_fields"):
            raise AppendOnlyError(f"{type(self).__name__} rows are append-only; update refused")
        # A fresh instance carrying an existing pk would otherwise be saved as an UPDATE.
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError(f"{type(self).__name__} rows are append-only; delete refused")


class Event(AppendOnlyModel):
    """A chronicled fact about a realm: lifecycle, spend, score, tool use, turns…"""

    realm_id = models.CharField(max_length=80, db_index=True)
    kind = models.CharField(max_length=32)
    payload = models.JSONField(default=dict)
    ts_ms = models.BigIntegerField(default=now_ms)

    class Meta:
        ordering = ("ts_ms", "id")
        indexes = [models.Index(fields=["realm_id", "kind", "id"], name="event_realm_kind")]

    def __str__(self) -> str:
        return f"{self.realm_id} {self.kind} @{self.ts_ms}"


class Message(AppendOnlyModel):
    """A message seen on a realm's bus, mirrored exactly once per Matrix event id."""

    realm_id = models.CharField(max_length=80, db_index=True)
    channel = models.CharField(max_length=255)
    sender = models.CharField(max_length=255)
    sender_agent = models.CharField(max_length=64, blank=True, default="")
    body = models.TextField()
    attachments = models.JSONField(default=list)
    ts_ms = models.BigIntegerField(default=now_ms)
    matrix_event_id = models.CharField(max_length=255, unique=True, null=True, blank=True)

    class Meta:
        ordering = ("ts_ms", "id")
        indexes = [models.Index(fields=["realm_id", "ts_ms", "id"], name="message_realm_ts")]

    def __str__(self) -> str:
        return f"{self.realm_id} {self.channel} {self.sender}: {self.body[:40]}"
