"""The operator's admin for scenarios, realms, the Warden, Herald, Forge and the Chronicle.

Everything here is for reading: rows change through the services (launch, provision, the
tick, teardown), never by hand, so no page edits or deletes them; the one action, "stop",
pulls the same kill switch as ``pit_stop`` and the API. Secrets stay out: a bus user's
access token is never a field, and a scenario file is shown by its size, not its bytes.
Each changelist reads its related rows in the same query (``list_select_related``) or in
one annotated query, so a page costs the same few queries however many rows it lists.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.db.models.functions import Length
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from chronicle.models import Event, Message
from realms.forge.models import Sandbox
from realms.herald.models import BusRealm, BusRoom, BusUser
from realms.models import Batch, Host, Realm, RealmAgent, Scenario, ScenarioFile
from realms.realmtools.models import Job, Schedule, Task, Wake
from realms.warden.models import WardenState
from realms.warden.termination import request_stop

# Django's classes are generic only to the type checker.
if TYPE_CHECKING:
    AnyAdminBase = admin.ModelAdmin[Any]
    AnyTabularBase = admin.TabularInline[Any, Any]
    AnyStackedBase = admin.StackedInline[Any, Any]
else:
    AnyAdminBase = admin.ModelAdmin
    AnyTabularBase = admin.TabularInline
    AnyStackedBase = admin.StackedInline

RECENT_ROWS = 20  # events and messages shown on a realm's page; the rest are a link away
_PREVIEW_CHARS = 120


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= _PREVIEW_CHARS else text[: _PREVIEW_CHARS - 1] + "…"


def _changelist_link(model: type[Any], label: str, **filters: str) -> SafeString:
    meta = model._meta
    url = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
    return format_html('<a href="{}?{}">{}</a>', url, urlencode(filters), label)


class NoWrites:
    """Viewable, never added, changed or deleted through the admin."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ReadOnlyAdmin(NoWrites, AnyAdminBase):
    pass


class ReadOnlyTabular(NoWrites, AnyTabularBase):
    extra = 0
    can_delete = False
    show_change_link = True


# --- scenarios ---------------------------------------------------------------------------


class ScenarioFileInline(ReadOnlyTabular):
    model = ScenarioFile
    fields = ("path", "mode_octal", "size")
    readonly_fields = fields
    show_change_link = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        # The bytes stay in the database: only their length is read.
        rows: QuerySet[Any] = super().get_queryset(request)
        sized: QuerySet[Any] = rows.defer("content").annotate(size=Length("content"))
        return sized

    @admin.display(description="mode")
    def mode_octal(self, obj: ScenarioFile) -> str:
        return f"{obj.mode:o}"

    @admin.display(description="bytes")
    def size(self, obj: Any) -> int:
        return int(obj.size)


@admin.register(Scenario)
class ScenarioAdmin(ReadOnlyAdmin):
    list_display = ("name", "source", "title", "valid", "file_count", "validated_at")
    list_filter = ("source", "valid")
    search_fields = ("name", "title")
    readonly_fields = ("validation_problems",)
    exclude = ("validation",)
    inlines = (ScenarioFileInline,)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scenario]:
        rows: QuerySet[Scenario] = super().get_queryset(request)
        return rows.annotate(file_total=Count("files"))

    @admin.display(description="files", ordering="file_total")
    def file_count(self, obj: Any) -> int:
        return int(obj.file_total)

    @admin.display(description="validation")
    def validation_problems(self, obj: Scenario) -> str:
        return json.dumps(obj.validation, indent=2, ensure_ascii=False)


# --- realms ------------------------------------------------------------------------------


class RealmAgentInline(ReadOnlyTabular):
    model = RealmAgent
    fields = ("agent_id", "role", "name", "model", "provider", "budget_usd", "state")
    readonly_fields = fields
    show_change_link = False


class WardenInline(AnyStackedBase):
    model = WardenState
    can_delete = False
    fields = ("ticks", "failures", "kicked_off", "watch_started_ms", "updated_at")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Realm)
class RealmAdmin(ReadOnlyAdmin):
    list_display = (
        "realm_id",
        "package_name",
        "scenario",
        "state",
        "provider",
        "agent_count",
        "ticks",
        "stop_requested",
        "created_at",
        "concluded_at",
    )
    list_filter = ("state", "scenario")
    list_select_related = ("scenario", "warden")
    search_fields = ("realm_id", "package_name")
    date_hierarchy = "created_at"
    exclude = ("project", "run_config", "parameters")
    readonly_fields = ("parameter_values", "recent_events", "recent_messages")
    inlines = (WardenInline, RealmAgentInline)
    actions = ("stop",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Realm]:
        rows: QuerySet[Realm] = super().get_queryset(request)
        return rows.annotate(agent_total=Count("agents"))

    @admin.display(description="agents", ordering="agent_total")
    def agent_count(self, obj: Any) -> int:
        return int(obj.agent_total)

    @admin.display(description="ticks")
    def ticks(self, obj: Realm) -> int | None:
        warden = getattr(obj, "warden", None)
        return None if warden is None else warden.ticks

    @admin.display(description="parameters")
    def parameter_values(self, obj: Realm) -> str:
        return json.dumps(obj.parameters, indent=2, ensure_ascii=False)

    @admin.display(description=f"last {RECENT_ROWS} events")
    def recent_events(self, obj: Realm) -> SafeString:
        rows = Event.objects.filter(realm_id=obj.realm_id).order_by("-ts_ms", "-id")[:RECENT_ROWS]
        table = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((e.ts_ms, e.kind, _preview(e.payload)) for e in rows),
        )
        link = _changelist_link(Event, "all events", realm_id=obj.realm_id)
        return format_html("<table>{}</table>{}", table, link)

    @admin.display(description=f"last {RECENT_ROWS} messages")
    def recent_messages(self, obj: Realm) -> SafeString:
        rows = Message.objects.filter(realm_id=obj.realm_id).order_by("-ts_ms", "-id")
        table = format_html_join(
            "",
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            ((m.ts_ms, m.sender_agent or m.sender, _preview(m.body)) for m in rows[:RECENT_ROWS]),
        )
        link = _changelist_link(Message, "all messages", realm_id=obj.realm_id)
        return format_html("<table>{}</table>{}", table, link)

    @admin.action(description="Stop the selected realms (the Warden concludes them as manual)")
    def stop(self, request: HttpRequest, queryset: QuerySet[Realm]) -> None:
        live = [r.realm_id for r in queryset if not r.is_terminal]
        for realm_id in live:
            request_stop(realm_id)
        over = queryset.count() - len(live)
        if live:
            self.message_user(request, f"stop requested: {', '.join(live)}")
        if over:
            self.message_user(request, f"{over} selected realm(s) had ended", messages.WARNING)


@admin.register(WardenState)
class WardenStateAdmin(ReadOnlyAdmin):
    list_display = ("realm", "realm_state", "ticks", "failures", "kicked_off", "updated_at")
    list_select_related = ("realm",)
    list_filter = ("realm__state",)
    search_fields = ("realm__realm_id",)

    @admin.display(description="state", ordering="realm__state")
    def realm_state(self, obj: WardenState) -> str:
        return str(obj.realm.state)


# --- the Chronicle -----------------------------------------------------------------------


class ChronicleAdmin(ReadOnlyAdmin):
    """The Chronicle is append-only (its triggers refuse updates); the admin only reads.
    Its tables grow without end, so a page does not count them all."""

    show_full_result_count = False
    list_per_page = 100
    search_fields = ["realm_id"]


@admin.register(Event)
class EventAdmin(ChronicleAdmin):
    list_display = ("id", "realm_id", "kind", "ts_ms", "payload_preview")
    list_filter = ("kind",)

    @admin.display(description="payload")
    def payload_preview(self, obj: Event) -> str:
        return _preview(obj.payload)


@admin.register(Message)
class MessageAdmin(ChronicleAdmin):
    list_display = ("id", "realm_id", "channel", "sender_agent", "ts_ms", "body_preview")
    search_fields = ["realm_id", "sender_agent"]

    @admin.display(description="body")
    def body_preview(self, obj: Message) -> str:
        return _preview(obj.body)


# --- Herald (the bus) and Forge (the sandboxes) ------------------------------------------


class BusUserInline(ReadOnlyTabular):
    model = BusUser
    fields = ("agent_id", "role", "user_id", "position", "deactivated")  # never the token
    readonly_fields = fields
    show_change_link = False


class BusRoomInline(ReadOnlyTabular):
    model = BusRoom
    fields = ("room_id", "kind", "label", "agent_a", "agent_b")
    readonly_fields = fields
    show_change_link = False


@admin.register(BusRealm)
class BusRealmAdmin(ReadOnlyAdmin):
    list_display = ("realm_id", "commons_room_id", "turns", "allow_side_channels", "closed_at")
    search_fields = ("realm_id",)
    inlines = (BusUserInline, BusRoomInline)


@admin.register(BusUser)
class BusUserAdmin(ReadOnlyAdmin):
    list_display = ("user_id", "bus", "agent_id", "role", "deactivated")
    list_select_related = ("bus",)
    search_fields = ("user_id", "bus__realm_id")
    fields = ("bus", "agent_id", "role", "user_id", "device_id", "position", "deactivated")


@admin.register(BusRoom)
class BusRoomAdmin(ReadOnlyAdmin):
    list_display = ("room_id", "bus", "kind", "label", "agent_a", "agent_b")
    list_select_related = ("bus",)
    list_filter = ("kind",)
    search_fields = ("room_id", "bus__realm_id")


@admin.register(Sandbox)
class SandboxAdmin(ReadOnlyAdmin):
    list_display = ("realm_id", "agent_id", "backend", "state", "host_uid", "pid", "stopped_at")
    list_filter = ("backend", "state")
    search_fields = ("realm_id", "agent_id")


# --- research and the task board ---------------------------------------------------------


@admin.register(Batch)
class BatchAdmin(ReadOnlyAdmin):
    list_display = ("batch_id", "package_name", "count", "concurrency", "state", "created_at")
    list_filter = ("state", "package_name")
    search_fields = ("batch_id", "package_name")


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = ("realm", "number", "title", "state", "claimant", "assignee")
    list_select_related = ("realm",)
    list_filter = ("state",)
    search_fields = ("realm__realm_id", "title")


@admin.register(Schedule)
class ScheduleAdmin(ReadOnlyAdmin):
    list_display = ("realm", "number", "agent_id", "kind", "spec", "state", "fired", "skipped")
    list_select_related = ("realm",)
    list_filter = ("state", "kind")
    search_fields = ("realm__realm_id", "agent_id")


@admin.register(Job)
class JobAdmin(ReadOnlyAdmin):
    list_display = ("realm", "number", "agent_id", "state", "exit_code", "started_ms")
    list_select_related = ("realm",)
    list_filter = ("state",)
    search_fields = ("realm__realm_id", "agent_id")


@admin.register(Wake)
class WakeAdmin(ReadOnlyAdmin):
    list_display = ("realm", "agent_id", "source", "ref", "state", "deliveries", "due_ms")
    list_select_related = ("realm",)
    list_filter = ("state", "source")
    search_fields = ("realm__realm_id", "agent_id")


@admin.register(Host)
class HostAdmin(ReadOnlyAdmin):
    """Worker hosts announce themselves and beat; their rows change only through that."""

    list_display = ("host_id", "state", "capacity", "live_realms", "backend", "last_heartbeat")
    list_filter = ("state", "backend")
    search_fields = ("host_id",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Host]:
        live = ~Q(realms__state__in=Realm.TERMINAL_STATES)
        rows: QuerySet[Host] = super().get_queryset(request)
        return rows.annotate(live=Count("realms", filter=live))

    @admin.display(description="live realms", ordering="live")
    def live_realms(self, obj: Host) -> int:
        return int(getattr(obj, "live", 0))
