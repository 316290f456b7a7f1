"""What every realm route shares: finding the realm, and the answer of a refusal."""

from __future__ import annotations

from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from chronicle import selectors
from realms.ids import is_realm_id


def not_found(message: str) -> NotFound:
    """A 404 whose body is ``{error}``, as every other refusal of the API."""
    return NotFound({"error": message})


def known(realm_id: str) -> str:
    """The realm id, or a 404 when neither a row nor the Chronicle knows it."""
    # An id no realm can have is not looked up (a NUL would not even reach the database).
    if not is_realm_id(realm_id) or not selectors.realm_known(realm_id):
        raise not_found(f"realm {realm_id!r}: no such realm")
    return realm_id


def refusal(status: int, message: str) -> Response:
    return Response({"error": message}, status=status)
