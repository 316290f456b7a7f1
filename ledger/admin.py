"""The operator's console for keys, profiles, virtual keys and spend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

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


@admin.register(Credential)
class CredentialAdmin(CredentialAdminBase):
    form = CredentialForm
    list_display = ("handle", "provider", "api_base", "masked", "created_at", "rotated_at")
    search_fields = ("handle", "provider")
    readonly_fields = ("masked", "created_at", "rotated_at")

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


@admin.register(ProviderProfile)
class ProviderProfileAdmin(ProfileAdminBase):
    form = ProfileForm
    list_display = ("name", "active", "label", "transport", "api_key_ref", "flat_rate", "source")
    actions = ("make_active",)

    @admin.display(boolean=True)
    def active(self, obj: ProviderProfile) -> bool:
        return obj.name == active_provider_name()

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
    raw_id_fields = ("key",)
