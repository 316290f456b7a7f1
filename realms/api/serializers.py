"""What the realm routes accept and answer, as DRF serializers.

The request serializers parse (strictly, see :mod:`realms.api.fields`); the response
serializers describe each answer for the OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from realms.api.fields import (
    QueryBooleanField,
    ScalarField,
    StrictBooleanField,
    StrictCharField,
    StrictSerializer,
)
from realms.packages.schema.project import Turns

# The override obeys the bounds of spec.turns.silence_timeout_s in a package.
_SILENCE_BOUNDS = {type(m).__name__: m for m in Turns.model_fields["silence_timeout_s"].metadata}
SILENCE_ABOVE = float(_SILENCE_BOUNDS["Gt"].gt)
SILENCE_AT_MOST = float(_SILENCE_BOUNDS["Le"].le)
DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
DEFAULT_RUNS_LIMIT = 300


class SilenceField(serializers.FloatField):
    def to_internal_value(self, data: Any) -> float:
        if (
            isinstance(data, bool)
            or not isinstance(data, int | float)
            or not SILENCE_ABOVE < data <= SILENCE_AT_MOST
        ):
            raise ValidationError(
                f"expected a number of seconds, above {SILENCE_ABOVE:g} and at most "
                f"{SILENCE_AT_MOST:g}; got {data!r}"
            )
        return float(data)


class LimitField(serializers.IntegerField):
    """``limit`` in a query string: an integer from 1 to ``max_value``."""

    def __init__(self, *, maximum: int, **kwargs: Any) -> None:
        self.maximum = maximum
        super().__init__(min_value=1, max_value=maximum, **kwargs)

    def to_internal_value(self, data: Any) -> int:
        try:
            value = int(str(data).strip())
        except ValueError:
            raise ValidationError(f"expected an integer; got {data!r}") from None
        if not 1 <= value <= self.maximum:
            raise ValidationError(f"must be between 1 and {self.maximum}; got {value}")
        return value


# --- requests -------------------------------------------------------------------


class TurnsOverride(StrictSerializer):
    enabled = StrictBooleanField(required=False)
    silence_timeout_s = SilenceField(required=False, allow_null=False)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, dict):
            raise ValidationError("expected an object {enabled, silence_timeout_s}")
        return super().to_internal_value(data)


class LaunchRequest(StrictSerializer):
    package = StrictCharField(
        help_text="the name of a scenario in the library",
        error_messages={
            "required": "required: the name of a scenario in the library",
            "blank": "required: the name of a scenario in the library",
            "null": "required: the name of a scenario in the library",
        },
    )
    realm_id = StrictCharField(required=False, allow_null=True, allow_blank=True)
    free_response = StrictBooleanField(required=False, default=False)
    turns = TurnsOverride(required=False, allow_null=True)
    parameters = serializers.DictField(
        child=ScalarField(),
        required=False,
        default=dict,
        error_messages={"not_a_dict": "expected an object of NAME: value"},
    )
    allow_missing_parameters = StrictBooleanField(required=False, default=False)
    allow_provider_fallback = StrictBooleanField(required=False, default=False)
    allow_elevated_tools = StrictBooleanField(
        required=False,
        default=False,
        help_text="consent to a package that grants elevated tools or open network egress",
    )
    provider = StrictCharField(required=False, allow_null=True, allow_blank=True)


class MessageRequest(StrictSerializer):
    text = StrictCharField(
        trim_whitespace=False,
        allow_blank=True,
        error_messages={"required": "required string field missing"},
    )
    to = StrictCharField(required=False, allow_null=True, allow_blank=True)


class RerunQuery(StrictSerializer):
    mode = serializers.ChoiceField(
        choices=("snapshot", "latest"),
        required=False,
        default="snapshot",
        error_messages={"invalid_choice": "expected snapshot or latest; got {input!r}"},
    )
    allow_provider_fallback = QueryBooleanField(required=False, default=False)
    allow_elevated_tools = QueryBooleanField(required=False, default=False)


RerunQuery._declared_fields["as"] = StrictCharField(
    required=False, allow_blank=True, max_length=80, help_text="the new realm's id"
)


class LimitQuery(StrictSerializer):
    limit = LimitField(maximum=MAX_LIMIT, required=False, default=DEFAULT_LIMIT)


class EventsQuery(LimitQuery):
    kind = serializers.CharField(required=False, allow_blank=True, max_length=32)


class RunsQuery(StrictSerializer):
    scenario = serializers.CharField(required=False, allow_blank=True, max_length=120)
    limit = LimitField(maximum=MAX_LIMIT, required=False, default=DEFAULT_RUNS_LIMIT)


class MachineQuery(StrictSerializer):
    # ``as`` is a keyword in Python, so the field is declared under it by hand below.
    pass


MachineQuery._declared_fields["as"] = serializers.CharField(
    help_text="the seat (an agent id) whose view is shown", max_length=64
)


class EmptyRequest(StrictSerializer):
    pass


# --- responses ------------------------------------------------------------------


class Error(serializers.Serializer):  # type: ignore[type-arg]
    error = serializers.CharField()


# A 400 names the fields at fault ({field: message}), or is a refused launch
# ({error, problems, missing}): an object either way.
Problems = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="each field at fault with its message, or {error, problems, missing, elevated}",
)


class RealmRow(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    state = serializers.CharField()
    active = serializers.BooleanField()
    host = serializers.CharField(
        allow_null=True, help_text="the worker host running it (none in the embedded default)"
    )


class RealmList(serializers.Serializer):  # type: ignore[type-arg]
    realms = RealmRow(many=True)
    active = serializers.IntegerField()
    capacity = serializers.IntegerField()


class HostRow(serializers.Serializer):  # type: ignore[type-arg]
    host_id = serializers.CharField()
    state = serializers.CharField(help_text="reaping, up or dead")
    backend = serializers.CharField()
    capacity = serializers.IntegerField()
    load = serializers.IntegerField(help_text="its realms that have not ended")
    last_heartbeat = serializers.DateTimeField()
    heartbeat_age_s = serializers.FloatField()
    realms = serializers.ListField(child=serializers.CharField())


class HostList(serializers.Serializer):  # type: ignore[type-arg]
    hosts = HostRow(many=True)


class Started(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    state = serializers.CharField()


class RerunStarted(Started):
    mode = serializers.CharField()
    rerun_of = serializers.CharField()


class Tokens(serializers.Serializer):  # type: ignore[type-arg]
    # "in" is a Python keyword: declared by hand below.
    out = serializers.IntegerField()


Tokens._declared_fields["in"] = serializers.IntegerField()


class RealmStatus(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    state = serializers.CharField()
    outcome = serializers.JSONField(allow_null=True)
    conclusion = serializers.DictField(allow_null=True)
    config = serializers.DictField()
    spend = serializers.DictField(child=serializers.FloatField())
    total_spend = serializers.FloatField()
    tokens = serializers.DictField(child=Tokens())
    total_tokens = serializers.IntegerField()
    scores = serializers.DictField(help_text="the verdict's scoreboard, else the ledger's")
    score_ledger = serializers.DictField(child=serializers.FloatField())
    score_discrepancy = serializers.BooleanField()
    violations = serializers.ListField(child=serializers.DictField())
    messages = serializers.IntegerField()
    events = serializers.IntegerField()
    active = serializers.BooleanField()
    error = serializers.CharField(allow_null=True)


class TranscriptMessage(serializers.Serializer):  # type: ignore[type-arg]
    ts = serializers.IntegerField()
    channel = serializers.CharField()
    sender = serializers.CharField()
    body = serializers.CharField()


class Transcript(serializers.Serializer):  # type: ignore[type-arg]
    channels = serializers.DictField(child=serializers.CharField())
    messages = TranscriptMessage(many=True)


class EventRow(serializers.Serializer):  # type: ignore[type-arg]
    ts = serializers.IntegerField()
    kind = serializers.CharField()
    payload = serializers.DictField()


class Events(serializers.Serializer):  # type: ignore[type-arg]
    events = EventRow(many=True)


class StopAccepted(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    stop_requested = serializers.BooleanField()


class Delivered(serializers.Serializer):  # type: ignore[type-arg]
    delivered = serializers.BooleanField()
    event_id = serializers.CharField()


class NotDelivered(serializers.Serializer):  # type: ignore[type-arg]
    delivered = serializers.BooleanField()
    recorded = serializers.BooleanField()
    error = serializers.CharField()
    retryable = serializers.BooleanField()


class OutputFile(serializers.Serializer):  # type: ignore[type-arg]
    name = serializers.CharField()
    size = serializers.IntegerField()
    sha256 = serializers.CharField()
    url = serializers.CharField()


class Outputs(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    outputs = OutputFile(many=True)


class MachineView(serializers.Serializer):  # type: ignore[type-arg]
    state = serializers.CharField()
    terminal = serializers.BooleanField()
    actor = serializers.CharField(allow_null=True)


# "data" would shadow Serializer.data: declared by hand.
MachineView._declared_fields["data"] = serializers.DictField()


class MachineStep(serializers.Serializer):  # type: ignore[type-arg]
    id = serializers.IntegerField()
    ts = serializers.IntegerField()
    entry = serializers.DictField(allow_null=True)
    before = MachineView()
    after = MachineView()


class MachineHistory(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    seat = serializers.CharField()
    initial = MachineView()
    steps = MachineStep(many=True)
    current = MachineView()


class RunRow(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    scenario = serializers.CharField()
    state = serializers.CharField()
    outcome = serializers.JSONField(allow_null=True)
    spend = serializers.FloatField()
    duration_s = serializers.FloatField(allow_null=True)
    updated = serializers.DateTimeField()
    active = serializers.BooleanField()


class Runs(serializers.Serializer):  # type: ignore[type-arg]
    runs = RunRow(many=True)
    capacity = serializers.IntegerField()
    active = serializers.IntegerField()
