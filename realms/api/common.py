"""What every realm route shares: finding the realm, and the answer of a refusal."""

from __future__ import annotations

from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from chronicle import selectors


def known(realm_id: str) -> str:
    """The realm id, or a 404 when neither a row nor the Chronicle knows it."""
    if not selectors.realm_known(realm_id):
        raise NotFound(f"realm {realm_id!r}: no such realm")
    return realm_id


def refusal(status: int, message: str) -> Response:
    return Response({"error": message}, status=status)
