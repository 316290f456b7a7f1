"""Scribe's sessions in the admin, for reading: a session changes only through its
conversation and its approval. Its key's secret is never a field."""

from __future__ import annotations

from django.contrib import admin

from realms.admin import ReadOnlyAdmin, ReadOnlyTabular
from scribe.models import DraftVersion, HistoryEntry, ScribeSession


class DraftVersionInline(ReadOnlyTabular):
    model = DraftVersion
    fields = ("number", "note", "created_at")
    readonly_fields = fields
    show_change_link = False


@admin.register(ScribeSession)
class ScribeSessionAdmin(ReadOnlyAdmin):
    list_display = ("session_id", "mode", "scenario", "state", "provider", "model", "updated_at")
    list_filter = ("mode", "state")
    search_fields = ("session_id", "scenario")
    exclude = ("key_secret", "messages", "transcript")
    inlines = (DraftVersionInline,)


@admin.register(HistoryEntry)
class HistoryEntryAdmin(ReadOnlyAdmin):
    list_display = ("scenario", "kind", "name", "created_at")
    list_select_related = ("session",)
    list_filter = ("kind",)
    search_fields = ("scenario", "text")
