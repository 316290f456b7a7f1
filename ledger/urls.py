"""Ledger routes under ``api/``."""

from __future__ import annotations

from django.urls import path

from ledger.api import ProviderSettingView

urlpatterns = [
    path("settings/provider", ProviderSettingView.as_view(), name="api-settings-provider"),
]
