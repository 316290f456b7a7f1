"""``GET /api/hosts``: the worker hosts, their load against their capacity, and how long
ago each last beat."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api import schema as _schema  # noqa: F401  (registers the token scheme)
from realms.api import serializers as s
from realms.api.fields import parse_query
from realms.hosts.listing import host_rows


class HostListView(OperatorAPIView):
    """Every worker host that announced itself, by id."""

    @extend_schema(operation_id="hosts_list", responses={200: s.HostList})
    def get(self, request: Request) -> Response:
        parse_query(s.EmptyRequest, request.query_params)
        return Response({"hosts": host_rows()})
