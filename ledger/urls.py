"""Ledger routes under ``api/``."""

from __future__ import annotations

from django.urls import path

from ledger.api.views import ModelConfigView, ProviderSettingView, SettingsView

urlpatterns = [
    path("settings", SettingsView.as_view(), name="api-settings"),
    path("settings/provider", ProviderSettingView.as_view(), name="api-settings-provider"),
    path("settings/model-config", ModelConfigView.as_view(), name="api-settings-model-config"),
]
