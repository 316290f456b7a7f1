"""The one rule for a realm id.

Realm ids name folders, Matrix localparts and gate entries, so every place that accepts
one checks it here. Lower-case letters, digits and ``-`` can never hold ``/``, ``..``
or the ``=`` that separates a localpart's realm from its agent.

Imported by the gate module inside the homeserver: no Django here.
"""

from __future__ import annotations

import re

REALM_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,79}")


class InvalidRealmId(ValueError):
    """A realm id outside the rule."""


def is_realm_id(value: str) -> bool:
    return REALM_ID.fullmatch(value) is not None


def check_realm_id(value: str) -> str:
    """``value`` itself, or InvalidRealmId: ids are refused, never rewritten."""
    if not is_realm_id(value):
        raise InvalidRealmId(
            f"realm id {value!r}: expected 1-80 lower-case letters, digits and '-', "
            "not starting with '-'"
        )
    return value
