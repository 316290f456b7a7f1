"""``GET /api/realms/{id}/machine?as=SEAT``: a state-machine realm as one seat saw it.

Step by step, the view before and after each step, filtered exactly as ``game_state``
filters it for that seat: data another seat owns, or that only the referee may read,
never appears.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from bearpit.auth import OperatorAPIView
from realms.api import serializers as s
from realms.api.common import known, not_found
from realms.api.fields import parse_query
from realms.realmtools.machine.service import UnknownSeat, seat_history

_AS = OpenApiParameter("as", str, required=True, description="the seat (an agent id)")


class RealmMachineView(OperatorAPIView):
    """The realm's state machine, step by step, as one seat saw it."""

    @extend_schema(
        parameters=[_AS], responses={200: s.MachineHistory, 400: s.Problems, 404: s.Error}
    )
    def get(self, request: Request, realm_id: str) -> Response:
        known(realm_id)
        seat = parse_query(s.MachineQuery, request.query_params)["as"]
        try:
            history = seat_history(realm_id, seat)
        except UnknownSeat as exc:
            raise ValidationError({"as": str(exc)}) from None
        if history is None:
            raise not_found(f"realm {realm_id!r} declares no state machine")
        return Response({"realm_id": realm_id, "seat": seat, **history})
