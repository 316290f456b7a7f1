"""``GET /api/runs``: the run history, newest first, optionally of one scenario."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api import serializers as s
from realms.api.fields import parse_query
from realms.api.status import run_history


class RunsView(OperatorAPIView):
    """The run history, newest first."""

    @extend_schema(parameters=[s.RunsQuery], responses={200: s.Runs, 400: s.Problems})
    def get(self, request: Request) -> Response:
        query = parse_query(s.RunsQuery, request.query_params)
        return Response(run_history(scenario=query.get("scenario") or None, limit=query["limit"]))
