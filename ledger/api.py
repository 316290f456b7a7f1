"""``GET/PUT /api/settings/provider``: which provider profile launches resolve against."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from ledger.services.profiles import (
    Profile,
    ProfileError,
    active_provider_name,
    all_profiles,
    set_active_profile,
    stored_provider,
)


class ProviderChoiceSerializer(serializers.Serializer[dict[str, Any]]):
    model_provider = serializers.CharField(max_length=60)


def _describe(profile: Profile) -> dict[str, Any]:
    return {
        "name": profile.name,
        "label": profile.label,
        "transport": profile.transport,
        "api_key_ref": profile.api_key_ref,
        "setup_hint": profile.setup_hint,
        "source": profile.source,
        "categories": {
            tier: {
                "model": t.model,
                "effort": t.effort,
                "input_cost_per_token": None
                if t.input_cost_per_token is None
                else float(t.input_cost_per_token),
                "output_cost_per_token": None
                if t.output_cost_per_token is None
                else float(t.output_cost_per_token),
                "context_length": t.context_length,
            }
            for tier, t in profile.categories.items()
        },
    }


def _state() -> dict[str, Any]:
    override = settings.BEARPIT_PROVIDER
    return {
        "model_provider": active_provider_name(),
        "stored": stored_provider(),
        "overridden_by_env": bool(override),
        "providers": [_describe(p) for p in all_profiles().values()],
    }


class ProviderSettingView(OperatorAPIView):
    @extend_schema(responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response(_state())

    @extend_schema(request=ProviderChoiceSerializer, responses={200: dict})
    def put(self, request: Request) -> Response:
        data = ProviderChoiceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            set_active_profile(data.validated_data["model_provider"])
        except ProfileError as exc:
            return Response({"model_provider": [str(exc)]}, status=400)
        return Response(_state())
