"""Request and response shapes of the settings routes.

Requests are strict: a field the route does not know is named in a 400, not ignored, so
a typo in an edit never passes for a successful save. Responses are serialized through
these classes too, so what the schema documents is what is sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from drf_spectacular.extensions import OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import Direction, extend_schema_field
from rest_framework import serializers

from ledger.models import ProviderProfile
from ledger.services.profiles import Profile, TierSpec
from realms.forge.readiness import BACKENDS

# The efforts a tier may name, as the profile model spells them: Literal[...] | None.
EFFORTS = get_args(get_args(TierSpec.model_fields["effort"].annotation)[0])
PROFILE_SOURCES = (*ProviderProfile.Source.values, "plugin")
TOOL_KINDS = ("realmtool", "granted")
TRANSPORTS = tuple(ProviderProfile.Transport.values)
_MAX_CONTEXT = 100_000_000


class StrictSerializer(serializers.Serializer[dict[str, Any]]):
    """Refuses fields it does not declare, each named; ``min_fields`` of them at least."""

    min_fields = 0

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, Mapping):
            unknown = sorted(str(k) for k in data if k not in self.fields)
            if unknown:
                raise serializers.ValidationError({k: ["unknown field"] for k in unknown})
            if len(data) < self.min_fields:
                names = ", ".join(self.fields)
                raise serializers.ValidationError(f"name at least {self.min_fields} of {names}")
        return dict(super().to_internal_value(data))


class StrictSerializerSchema(OpenApiSerializerExtension):  # type: ignore[no-untyped-call]
    """The schema says what :class:`StrictSerializer` enforces, so a generated request
    (schemathesis, a client generator) knows an unknown field is refused."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        schema: dict[str, Any] = auto_schema._map_serializer(  # type: ignore[no-untyped-call]
            self.target, direction, bypass_extensions=True
        )
        schema["additionalProperties"] = False
        if self.target.min_fields:
            schema["minProperties"] = self.target.min_fields
        return schema


class TextField(serializers.CharField):
    """A JSON string: a number is not quietly turned into one."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return str(super().to_internal_value(data))


class NumberField(serializers.FloatField):
    """A JSON number: ``true`` is not 1, and ``"1e-6"`` is not a number."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return float(super().to_internal_value(data))


# Requests.


class ProviderChoiceSerializer(StrictSerializer):
    """The profile every launch resolves tiers against from now on."""

    model_provider = TextField(max_length=60)


class ProviderTierEditSerializer(StrictSerializer):
    """A tier as it will be stored: fields left out are stored empty."""

    model = TextField(max_length=200)
    effort = serializers.ChoiceField(choices=EFFORTS, allow_null=True, required=False)
    input_cost_per_token = NumberField(allow_null=True, required=False, min_value=0, max_value=1)
    output_cost_per_token = NumberField(allow_null=True, required=False, min_value=0, max_value=1)
    context_length = serializers.IntegerField(
        allow_null=True, required=False, min_value=1, max_value=_MAX_CONTEXT
    )


class ProviderTierEditsSerializer(StrictSerializer):
    """The tiers to replace; tiers not named stay as they are."""

    min_fields = 1
    small = ProviderTierEditSerializer(required=False)
    medium = ProviderTierEditSerializer(required=False)
    large = ProviderTierEditSerializer(required=False)


class ProviderEditSerializer(StrictSerializer):
    """The edit of one profile."""

    categories = ProviderTierEditsSerializer()


class ModelConfigSerializer(StrictSerializer):
    """Edits of profiles' tiers, by profile name; all are saved, or none."""

    providers = serializers.DictField(
        child=ProviderEditSerializer(), allow_empty=False, help_text="by profile name"
    )


# Responses.


class ProviderTierSerializer(serializers.Serializer[Any]):
    model = serializers.CharField()
    effort = serializers.ChoiceField(choices=EFFORTS, allow_null=True)
    input_cost_per_token = serializers.FloatField(allow_null=True)
    output_cost_per_token = serializers.FloatField(allow_null=True)
    context_length = serializers.IntegerField(allow_null=True)


class ProviderTiersSerializer(serializers.Serializer[Any]):
    small = ProviderTierSerializer(required=False)
    medium = ProviderTierSerializer(required=False)
    large = ProviderTierSerializer(required=False)


class ProviderProfileSerializer(serializers.Serializer[Profile]):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, not Field.label
    description = serializers.CharField()
    transport = serializers.ChoiceField(choices=TRANSPORTS)
    litellm_provider = serializers.CharField()
    api_base = serializers.CharField()
    api_key_ref = serializers.CharField(help_text="the handle of the key this profile uses")
    setup_hint = serializers.CharField()
    source = serializers.ChoiceField(  # type: ignore[assignment]  # a field, not Field.source
        choices=PROFILE_SOURCES
    )
    editable = serializers.SerializerMethodField(
        help_text="whether model-config may change its tiers (not for plugin profiles)"
    )
    flat_rate = serializers.BooleanField()
    min_budget_usd = serializers.FloatField(allow_null=True)
    min_turn_seconds = serializers.FloatField(allow_null=True)
    categories = ProviderTiersSerializer()

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_editable(self, profile: Profile) -> bool:
        return profile.source != "plugin"


class ProviderStateSerializer(serializers.Serializer[Any]):
    model_provider = serializers.CharField(help_text="the profile launches resolve against")
    stored = serializers.CharField(help_text="the stored choice (BEARPIT_PROVIDER overrides it)")
    overridden_by_env = serializers.BooleanField()
    providers = ProviderProfileSerializer(many=True)


class StoredKeySerializer(serializers.Serializer[Any]):
    """A stored provider key, by handle: never the key, nor any part of it."""

    handle = serializers.CharField()
    provider = serializers.CharField()
    api_base = serializers.CharField()
    used_by = serializers.ListField(
        child=serializers.CharField(), help_text="profiles whose api_key_ref is this handle"
    )


class RealmCapacitySerializer(serializers.Serializer[Any]):
    max_active = serializers.IntegerField(help_text="BEARPIT_MAX_ACTIVE_REALMS")
    active = serializers.IntegerField(help_text="realms not yet ended")


class SandboxBackendSerializer(serializers.Serializer[Any]):
    name = serializers.ChoiceField(choices=BACKENDS)
    ready = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="why it is not ready")
    selected = serializers.BooleanField(help_text="the backend BEARPIT_SANDBOX names")
    isolates = serializers.BooleanField(help_text="false for process: development only")


class SandboxStateSerializer(serializers.Serializer[Any]):
    backend = serializers.CharField(help_text="BEARPIT_SANDBOX")
    backends = SandboxBackendSerializer(many=True)


class AgentToolSerializer(serializers.Serializer[Any]):
    name = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=TOOL_KINDS,
        help_text="realmtool: every wired agent has it; granted: per agent, by the package",
    )
    ready = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True, help_text="why it is not ready")


class SettingsPageSerializer(ProviderStateSerializer):
    keys = StoredKeySerializer(many=True)
    capacity = RealmCapacitySerializer()
    sandbox = SandboxStateSerializer()
    tools = AgentToolSerializer(many=True)
