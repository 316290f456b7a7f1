"""``/api/settings…``: what launches resolve against, and what the platform can run.

``GET /api/settings`` is the whole page: the active provider, every profile with its
tiers, the stored keys by handle (never a key), capacity and the tools with their
readiness. ``PUT /api/settings/provider`` switches the active provider, and
``PUT /api/settings/model-config`` replaces tiers of profiles; both answer the provider
state again. A bad request is a located 400 and changes nothing.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from ledger.api.serializers import (
    ModelConfigSerializer,
    ProviderChoiceSerializer,
    ProviderStateSerializer,
    SettingsPageSerializer,
)
from ledger.services.credentials import list_credentials
from ledger.services.model_config import ModelConfigError, save_model_config
from ledger.services.profiles import (
    Profile,
    ProfileError,
    active_provider_name,
    all_profiles,
    set_active_profile,
    stored_provider,
)
from realms.forge.readiness import backend_readiness, selected_backend
from realms.realmtools.readiness import tool_readiness
from realms.services.queue import active_realms

_BAD_REQUEST = {400: OpenApiTypes.OBJECT}


def _provider_state(profiles: dict[str, Profile]) -> dict[str, Any]:
    return {
        "model_provider": active_provider_name(),
        "stored": stored_provider(),
        "overridden_by_env": bool(settings.BEARPIT_PROVIDER),
        "providers": list(profiles.values()),
    }


def _settings_page() -> dict[str, Any]:
    profiles = all_profiles()
    backends = backend_readiness()
    selected = selected_backend()
    sandbox = next(b for b in backends if b.name == selected)
    keys = [
        {
            "handle": key.handle,
            "provider": key.provider,
            "api_base": key.api_base,
            "used_by": sorted(n for n, p in profiles.items() if p.api_key_ref == key.handle),
        }
        for key in list_credentials()
    ]
    return {
        **_provider_state(profiles),
        "keys": keys,
        "capacity": {"max_active": settings.BEARPIT_MAX_ACTIVE_REALMS, "active": active_realms()},
        "sandbox": {
            "backend": selected,
            "backends": [
                {
                    "name": b.name,
                    "ready": b.ready,
                    "reason": b.reason,
                    "selected": b.name == selected,
                    "isolates": b.name != "process",
                }
                for b in backends
            ],
        },
        "tools": tool_readiness(sandbox),
    }


def _state_response() -> Response:
    return Response(ProviderStateSerializer(_provider_state(all_profiles())).data)


class SettingsView(OperatorAPIView):
    @extend_schema(
        summary="Providers, tiers, keys by handle, capacity and tool readiness",
        responses={200: SettingsPageSerializer},
    )
    def get(self, request: Request) -> Response:
        return Response(SettingsPageSerializer(_settings_page()).data)


class ProviderSettingView(OperatorAPIView):
    @extend_schema(
        summary="The active provider and every profile", responses={200: ProviderStateSerializer}
    )
    def get(self, request: Request) -> Response:
        return _state_response()

    @extend_schema(
        summary="Switch the active provider",
        request=ProviderChoiceSerializer,
        responses={200: ProviderStateSerializer, **_BAD_REQUEST},
    )
    def put(self, request: Request) -> Response:
        data = ProviderChoiceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            set_active_profile(data.validated_data["model_provider"])
        except ProfileError as exc:
            raise ValidationError({"model_provider": [str(exc)]}) from exc
        return _state_response()


class ModelConfigView(OperatorAPIView):
    @extend_schema(
        summary="Replace tiers of provider profiles (tiers not named stay as they are)",
        request=ModelConfigSerializer,
        responses={200: ProviderStateSerializer, **_BAD_REQUEST},
    )
    def put(self, request: Request) -> Response:
        data = ModelConfigSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            save_model_config(data.validated_data["providers"])
        except ModelConfigError as exc:
            raise ValidationError({exc.field: [exc.message]}) from exc
        return _state_response()
