"""``GET /api/realms/{id}/agents/{agent}/view?at=T``: the agent's own view at a moment.

What its model saw in its last call at or before T (an ISO time, a ms timestamp or an
event id ``#N``; the latest call without ``at``): the system prompt, the tools offered,
the history as sent, and the reply. From the agent's trace, whose secrets the runtime
masked before writing it.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from chronicle import selectors
from chronicle.agentview import BadMoment, agent_view, parse_moment
from realms.api import serializers as s
from realms.api.common import known, not_found
from realms.api.fields import StrictSerializer, parse_query

_AT = OpenApiParameter(
    "at",
    str,
    required=False,
    description="an ISO time, a ms timestamp or an event id (#N); default: the latest call",
)


class AgentViewQuery(StrictSerializer):
    at = serializers.CharField(required=False, max_length=64)


class AgentViewAnswer(serializers.Serializer):  # type: ignore[type-arg]
    realm_id = serializers.CharField()
    agent = serializers.CharField()
    request_event = serializers.IntegerField(help_text="the trace event of the model call")
    ts_ms = serializers.IntegerField()
    run_id = serializers.CharField()
    turn = serializers.JSONField(allow_null=True)
    step = serializers.JSONField(allow_null=True)
    system = serializers.CharField(allow_null=True, help_text="the system prompt as sent")
    tools = serializers.ListField(child=serializers.JSONField(), help_text="the tools offered")
    tool_names = serializers.ListField(child=serializers.CharField())
    history = serializers.ListField(
        child=serializers.JSONField(), help_text="the messages after the system prompt"
    )
    history_omitted = serializers.IntegerField(help_text="older messages over the bound")
    reply = serializers.JSONField(allow_null=True, help_text="the model's text and tool calls")
    response = serializers.JSONField(allow_null=True, help_text="finish, usage and latency")
    response_event = serializers.IntegerField(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField())


class AgentViewView(OperatorAPIView):
    """What one agent's model saw at a moment, and what it answered."""

    @extend_schema(
        parameters=[_AT], responses={200: AgentViewAnswer, 400: s.Problems, 404: s.Error}
    )
    def get(self, request: Request, realm_id: str, agent: str) -> Response:
        known(realm_id)
        at = parse_query(AgentViewQuery, request.query_params).get("at")
        if agent not in selectors.realm_plan(realm_id).roster:
            raise not_found(f"realm {realm_id!r} has no agent {agent!r}")
        try:
            moment = parse_moment(realm_id, at) if at is not None else None
        except BadMoment as exc:
            raise ValidationError({"at": str(exc)}) from None
        view = agent_view(realm_id, agent, moment)
        if view is None:
            when = f" at or before {at}" if at is not None else ""
            raise not_found(f"{agent} made no model call{when}")
        return Response({"realm_id": realm_id, **view.as_dict()})
