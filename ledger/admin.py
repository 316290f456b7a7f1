"""The operator's console for keys, profiles, virtual keys and spend.

A provider key is written (added, rotated) and never read back: pages show its last
characters only. Virtual keys and spend are the gateway's record, read-only here, and a
virtual key's secret exists nowhere but with its agent (the row holds a hash).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import BooleanField, Case, QuerySet, Value, When
from django.http import HttpRequest, HttpResponseBase
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from ledger.models import Credential, LedgerSetting, ProviderProfile, Spend, VirtualKey
from ledger.services.credentials import CredentialError, add_credential, rotate_credential
from ledger.services.profiles import (
    ProfileError,
    active_provider_name,
    set_active_profile,
    validate_categories,
)

# Django's classes are generic only to the type checker.
if TYPE_CHECKING:
    CredentialFormBase = forms.ModelForm[Credential]
    ProfileFormBase = forms.ModelForm[ProviderProfile]
    CredentialAdminBase = admin.ModelAdmin[Credential]
    ProfileAdminBase = admin.ModelAdmin[ProviderProfile]
    SettingAdminBase = admin.ModelAdmin[LedgerSetting]
    AnyAdminBase = admin.ModelAdmin[Any]
else:
    CredentialFormBase = ProfileFormBase = forms.ModelForm
    CredentialAdminBase = ProfileAdminBase = SettingAdminBase = AnyAdminBase = admin.ModelAdmin


class CredentialForm(CredentialFormBase):
    api_key = forms.CharField(
        required=False,
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="Stored encrypted and never shown again. Leave empty to keep the current key "
        "(or for a keyless provider).",
    )

    class Meta:
        model = Credential
        fields = ("handle", "provider", "api_base")


class RotateForm(forms.Form):
    api_key = forms.CharField(
        strip=True,
        widget=forms.PasswordInput(render_value=False),
        help_text="The new key; stored encrypted and never shown again. Running realms use "
        "it from their next call.",
    )


@admin.register(Credential)
class CredentialAdmin(CredentialAdminBase):
    form = CredentialForm
    list_display = ("handle", "provider", "api_base", "masked", "created_at", "rotated_at")
    search_fields = ("handle", "provider")
    readonly_fields = ("masked", "created_at", "rotated_at")
    actions = ("rotate",)

    @admin.action(description="Rotate the provider key")
    def rotate(
        self, request: HttpRequest, queryset: QuerySet[Credential]
    ) -> HttpResponseBase | None:
        if queryset.count() != 1:
            self.message_user(request, "choose exactly one credential", messages.ERROR)
            return None
        cred = queryset.get()
        form = RotateForm(request.POST if "apply" in request.POST else None)
        if form.is_valid():
            try:
                rotate_credential(handle=cred.handle, api_key=form.cleaned_data["api_key"])
            except CredentialError as exc:
                self.message_user(request, str(exc), messages.ERROR)
            else:
                self.message_user(request, f"{cred.handle}: key rotated")
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": f"Rotate the key of {cred.handle}",
            "credential": cred,
            "form": form,
            "opts": self.model._meta,
            "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/ledger/credential/rotate.html", context)

    def get_readonly_fields(self, request: HttpRequest, obj: Credential | None = None) -> Any:
        # The handle is what scenarios refer to: rename = remove + add.
        return (*self.readonly_fields, "handle") if obj else self.readonly_fields

    def save_model(self, request: HttpRequest, obj: Credential, form: Any, change: bool) -> None:
        key = form.cleaned_data.get("api_key") or None
        try:
            if not change:
                add_credential(
                    handle=obj.handle, provider=obj.provider, api_key=key, api_base=obj.api_base
                )
            else:
                Credential.objects.filter(pk=obj.pk).update(
                    provider=obj.provider, api_base=obj.api_base
                )
                if key:
                    rotate_credential(handle=obj.handle, api_key=key)
        except CredentialError as exc:
            self.message_user(request, str(exc), messages.ERROR)
        saved = Credential.objects.filter(handle=obj.handle).first()
        if saved is not None:
            obj.pk = saved.pk


class ProfileForm(ProfileFormBase):
    class Meta:
        model = ProviderProfile
        fields = (
            "name",
            "label",
            "description",
            "transport",
            "litellm_provider",
            "api_base",
            "api_key_ref",
            "setup_hint",
            "categories",
            "flat_rate",
            "min_budget_usd",
            "min_turn_seconds",
            "source",
        )

    def clean_categories(self) -> Any:
        value = self.cleaned_data["categories"]
        try:
            validate_categories(value)
        except ProfileError as exc:
            raise forms.ValidationError(f"categories: {exc}") from exc
        return value


_TIER_COLUMNS = ("model", "effort", "input_cost_per_token", "output_cost_per_token")


def _tier_rows(categories: dict[str, Any]) -> Iterator[tuple[SafeString]]:
    for tier, spec in sorted(categories.items()):
        values = spec if isinstance(spec, dict) else {}
        cells = (tier, *(values.get(c, "") for c in _TIER_COLUMNS))
        yield (format_html_join("", "<td>{}</td>", ((v,) for v in cells)),)


@admin.register(ProviderProfile)
class ProviderProfileAdmin(ProfileAdminBase):
    form = ProfileForm
    list_display = ("name", "active", "label", "transport", "api_key_ref", "flat_rate", "source")
    readonly_fields = ("tiers",)
    actions = ("make_active",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProviderProfile]:
        # Which profile is active is read once for the page, not once a row.
        active = active_provider_name()
        return (
            super()
            .get_queryset(request)
            .annotate(
                is_active=Case(
                    When(name=active, then=Value(True)),
                    default=Value(False),
                    output_field=BooleanField(),
                )
            )
        )

    @admin.display(boolean=True, ordering="is_active")
    def active(self, obj: Any) -> bool:
        return bool(obj.is_active)

    @admin.display(description="tiers")
    def tiers(self, obj: ProviderProfile) -> SafeString:
        categories = obj.categories if isinstance(obj.categories, dict) else {}
        head = format_html_join("", "<th>{}</th>", ((c,) for c in ("tier", *_TIER_COLUMNS)))
        rows = format_html_join("", "<tr>{}</tr>", _tier_rows(categories))
        return format_html("<table><tr>{}</tr>{}</table>", head, rows)

    @admin.action(description="Make the active provider")
    def make_active(self, request: HttpRequest, queryset: QuerySet[ProviderProfile]) -> None:
        if queryset.count() != 1:
            self.message_user(request, "choose exactly one profile", messages.ERROR)
            return
        profile = set_active_profile(queryset.get().name)
        self.message_user(request, f"active provider: {profile.name}")


@admin.register(LedgerSetting)
class LedgerSettingAdmin(SettingAdminBase):
    list_display = ("key", "value", "updated_at")


class _ReadOnly(AnyAdminBase):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(VirtualKey)
class VirtualKeyAdmin(_ReadOnly):
    list_display = (
        "key_prefix",
        "realm_id",
        "agent_id",
        "provider",
        "model",
        "spent_nusd",
        "cap_nusd",
        "calls",
        "revoked_at",
    )
    list_filter = ("provider", "revoked_reason")
    search_fields = ("realm_id", "agent_id")
    exclude = ("key_hash", "script")


@admin.register(Spend)
class SpendAdmin(_ReadOnly):
    list_display = (
        "realm_id",
        "agent_id",
        "model",
        "tokens_in",
        "tokens_out",
        "cost_nusd",
        "latency_ms",
        "outcome",
        "ts_ms",
    )
    list_filter = ("outcome",)
    search_fields = ("realm_id", "agent_id")
    list_select_related = ("key",)
    raw_id_fields = ("key",)
