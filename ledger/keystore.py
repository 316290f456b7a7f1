"""Encryption of provider keys at rest (Fernet).

The Fernet key comes from ``BEARPIT_KEYSTORE_KEY`` or, failing that, from a key file
generated once under ``BEARPIT_HOME`` with mode 0600.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class KeystoreError(Exception):
    """The keystore key is unusable or a stored key cannot be decrypted."""


def _key_file() -> Path:
    return Path(settings.BEARPIT_HOME) / "keystore.key"


def _load_or_create_file_key(path: Path) -> bytes:
    try:
        return path.read_bytes().strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = Fernet.generate_key()
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    try:
        # link, not rename: if another process won the race, keep its key
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_bytes().strip()


@functools.cache
def _fernet() -> Fernet:
    configured: str | None = settings.BEARPIT_KEYSTORE_KEY
    raw = configured.encode() if configured else _load_or_create_file_key(_key_file())
    try:
        return Fernet(raw)
    except ValueError as exc:
        source = "BEARPIT_KEYSTORE_KEY" if configured else str(_key_file())
        raise KeystoreError(
            f"{source}: expected a Fernet key (32 url-safe base64-encoded bytes)"
        ) from exc


def encrypt(secret: str) -> bytes:
    return _fernet().encrypt(secret.encode("utf-8"))


def decrypt(token: bytes) -> str:
    try:
        return _fernet().decrypt(bytes(token)).decode("utf-8")
    except InvalidToken as exc:
        raise KeystoreError(
            "a stored provider key cannot be decrypted: the keystore key changed"
        ) from exc


def reset_cache() -> None:
    """Forget the loaded Fernet key (tests that change the keystore key)."""
    _fernet.cache_clear()
