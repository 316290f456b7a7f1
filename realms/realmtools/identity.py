"""Realmtools identity: the HMAC-signed bearer token every agent carries.

Token = ``b64url(realm:agent:role:roster_csv:grants_csv) "." b64url(HMAC-SHA256)``,
both parts unpadded. A four-field token (no grants) is the older form and
verifies as grantless. Identity is taken from the token only, never from tool
arguments.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

Role = Literal["referee", "player"]
ROLES: tuple[Role, ...] = ("referee", "player")
_MIN_SECRET = 32


class TokenError(Exception):
    """The bearer token is missing, malformed, forged or tampered with."""


@dataclass(frozen=True)
class Identity:
    realm_id: str
    agent_id: str
    role: Role
    roster: tuple[str, ...]
    grants: frozenset[str]

    @property
    def is_referee(self) -> bool:
        return self.role == "referee"


def hkdf(secret: bytes, info: str, length: int = 32) -> bytes:
    """One derived key per purpose, so no two uses share key material."""
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info.encode()).derive(
        secret
    )


def realmtools_secret() -> bytes:
    """The secret behind tokens and sealing: explicit, or derived from SECRET_KEY."""
    explicit: str | None = getattr(settings, "BEARPIT_REALMTOOLS_SECRET", None)
    if explicit is not None:
        if len(explicit) < _MIN_SECRET:
            raise ImproperlyConfigured(
                f"BEARPIT_REALMTOOLS_SECRET: expected at least {_MIN_SECRET} characters"
            )
        return explicit.encode()
    key = str(settings.SECRET_KEY)
    if len(key) < _MIN_SECRET:
        raise ImproperlyConfigured(
            f"SECRET_KEY is shorter than {_MIN_SECRET} characters; set "
            "BEARPIT_REALMTOOLS_SECRET for realmtools"
        )
    return hkdf(key.encode(), "bearpit/realmtools/secret/v1")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise TokenError("token is not base64url") from exc


def _sign(payload: bytes) -> bytes:
    return hmac.new(realmtools_secret(), payload, hashlib.sha256).digest()


def _check_field(name: str, value: str) -> None:
    if not value or any(ch in value for ch in ":,\n"):
        raise ValueError(f"{name} {value!r} cannot be carried in a realmtools token")


def mint_token(
    realm_id: str,
    agent_id: str,
    role: Role,
    roster: Iterable[str],
    grants: Iterable[str] = (),
) -> str:
    """Sign an identity. ``roster`` is the participants in roster order."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}; got {role!r}")
    roster_list = list(roster)
    grant_list = sorted(set(grants))
    for name, value in (("realm id", realm_id), ("agent id", agent_id)):
        _check_field(name, value)
    for value in [*roster_list, *grant_list]:
        _check_field("roster entry or grant", value)
    payload = ":".join([realm_id, agent_id, role, ",".join(roster_list), ",".join(grant_list)])
    raw = payload.encode()
    return f"{_b64(raw)}.{_b64(_sign(raw))}"


def verify_token(token: str) -> Identity:
    """Check the signature first, then the shape; raise TokenError otherwise."""
    body, sep, signature = token.strip().partition(".")
    if not sep or not body or not signature:
        raise TokenError("token has no signature part")
    raw = _unb64(body)
    if not hmac.compare_digest(_unb64(signature), _sign(raw)):
        raise TokenError("token signature does not match")
    try:
        fields = raw.decode().split(":")
    except UnicodeDecodeError as exc:
        raise TokenError("token payload is not text") from exc
    if len(fields) == 4:
        fields.append("")
    if len(fields) != 5:
        raise TokenError("token payload has the wrong number of fields")
    realm_id, agent_id, role, roster_csv, grants_csv = fields
    if not realm_id or not agent_id or role not in ROLES:
        raise TokenError("token payload is incomplete")
    return Identity(
        realm_id=realm_id,
        agent_id=agent_id,
        role="referee" if role == "referee" else "player",
        roster=tuple(x for x in roster_csv.split(",") if x),
        grants=frozenset(x for x in grants_csv.split(",") if x),
    )
