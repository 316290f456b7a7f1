"""What a production deployment must set, checked before anything starts.

``BEARPIT_PRODUCTION=true`` (deploy/compose.yaml sets it) turns the embedded default's
conveniences into errors: a generated secret or keystore key lives in one container's
volume and is lost or differs on the next host, and a broker without a password carries
every realm's live messages and tasks to whoever can reach it.
"""

from __future__ import annotations

import base64
import binascii
import re
from urllib.parse import unquote, urlsplit

from bearpit.env import DatabaseURL, SettingError

REDIS_SCHEMES = ("redis", "rediss", "unix")
MIN_SECRET_KEY = 32
# A host id names the host's own Celery queue (``host.<id>``) and its row.
HOST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")
HOST_ID_REQUIRED = (
    "BEARPIT_HOST_ID: required for a worker when BEARPIT_PRODUCTION is on "
    "(a name for this worker host, unique among the hosts sharing the database)"
)


def check_host_id(value: str | None) -> None:
    """A worker host's id: 1-80 letters, digits, '.', '_' or '-' (any deployment)."""
    if value is not None and not HOST_ID.match(value):
        raise SettingError(
            f"BEARPIT_HOST_ID: expected 1-80 letters, digits, '.', '_' or '-', starting with "
            f"a letter or digit; got {value!r}"
        )


def check_redis_url(url: str | None) -> None:
    """A broker URL Celery and Channels can both use (any deployment)."""
    if url is None:
        return
    parts = urlsplit(url)
    if parts.scheme not in REDIS_SCHEMES:
        raise SettingError(
            f"BEARPIT_REDIS_URL: expected a redis://, rediss:// or unix:// URL; "
            f"got scheme {parts.scheme or '(none)'!r}"
        )
    try:
        parts.port  # noqa: B018  (parsing it is the check)
    except ValueError:
        raise SettingError(
            f"BEARPIT_REDIS_URL: the port in {parts.hostname or parts.netloc!r} is not a number"
        ) from None


def check_production(
    *,
    debug: bool,
    database: DatabaseURL | None,
    redis_url: str | None,
    secret_key: str | None,
    keystore_key: str | None,
) -> None:
    """Raise :class:`SettingError` naming the first setting production cannot do without."""
    if database is None:
        raise SettingError(
            "BEARPIT_DATABASE_URL: required when BEARPIT_PRODUCTION is on "
            "(postgres://user:password@host:port/db)"
        )
    if not database.engine.endswith("postgresql"):
        raise SettingError(
            "BEARPIT_DATABASE_URL: expected a postgres:// URL when BEARPIT_PRODUCTION is on; "
            "SQLite serves one process only"
        )
    if not redis_url:
        raise SettingError(
            "BEARPIT_REDIS_URL: required when BEARPIT_PRODUCTION is on "
            "(redis://:password@host:6379/0)"
        )
    if not unquote(urlsplit(redis_url).password or ""):
        raise SettingError(
            "BEARPIT_REDIS_URL: expected a password (redis://:password@host:6379/0) when "
            "BEARPIT_PRODUCTION is on; every realm's messages and tasks pass through Redis"
        )
    if not debug and not secret_key:
        raise SettingError(
            "BEARPIT_SECRET_KEY: required when BEARPIT_PRODUCTION is on and BEARPIT_DEBUG is off"
        )
    if secret_key is not None and len(secret_key) < MIN_SECRET_KEY:
        raise SettingError(
            f"BEARPIT_SECRET_KEY: expected at least {MIN_SECRET_KEY} characters; "
            f"got {len(secret_key)}"
        )
    if not keystore_key:
        raise SettingError(
            "BEARPIT_KEYSTORE_KEY: required when BEARPIT_PRODUCTION is on (a Fernet key; "
            "a generated one would differ between containers and hosts)"
        )
    try:
        raw = base64.urlsafe_b64decode(keystore_key.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raw = b""
    if len(raw) != 32:
        raise SettingError(
            "BEARPIT_KEYSTORE_KEY: expected a Fernet key (32 bytes, URL-safe base64; "
            "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key())')"
        )
