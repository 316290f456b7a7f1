"""Sealed payloads at rest: Fernet with a key derived from the realmtools secret.

The escrow keeps only the sealed form in the Chronicle, so it survives restarts
without anyone reading a payload before the referee reveals the round.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken

from realms.realmtools.identity import hkdf, realmtools_secret

SEAL_INFO = "bearpit/escrow/seal/v1"


class SealError(Exception):
    """A sealed payload cannot be opened with this platform's secret."""


def _fernet() -> Fernet:
    return Fernet(base64.urlsafe_b64encode(hkdf(realmtools_secret(), SEAL_INFO)))


def seal(payload: str) -> str:
    return _fernet().encrypt(payload.encode()).decode("ascii")


def unseal(sealed: str) -> str:
    try:
        return _fernet().decrypt(sealed.encode("ascii")).decode()
    except (InvalidToken, ValueError) as exc:
        raise SealError("sealed payload cannot be opened (was the secret rotated?)") from exc
