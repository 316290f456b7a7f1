"""Typed readers for ``BEARPIT_*`` environment variables.

Every reader fails with :class:`SettingError` naming the variable, what was
expected and what was found, so a typo in a deployment stops start-up instead
of silently falling back to a default. ``NAME_FILE`` is honoured for every
variable so secrets can come from mounted files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class SettingError(Exception):
    """A BEARPIT_* variable is present but unusable."""


def _raw(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    file_var = f"{name}_FILE"
    if file_var in env:
        path = Path(env[file_var])
        try:
            return path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SettingError(f"{file_var}: cannot read {path}: {exc.strerror}") from exc
    value = env.get(name)
    if value is None:
        return None
    return value.strip()


def env_str(
    name: str, default: str | None = None, *, environ: Mapping[str, str] | None = None
) -> str | None:
    value = _raw(name, environ)
    return default if value in (None, "") else value


def env_bool(name: str, default: bool, *, environ: Mapping[str, str] | None = None) -> bool:
    value = _raw(name, environ)
    if value in (None, ""):
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise SettingError(f"{name}: expected a boolean (true/false/yes/no/1/0); got {value!r}")


def env_int(
    name: str,
    default: int,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> int:
    value = _raw(name, environ)
    if value in (None, ""):
        return default
    try:
        number = int(value)
    except ValueError:
        raise SettingError(f"{name}: expected a whole number; got {value!r}") from None
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}: expected at least {minimum}; got {number}")
    if maximum is not None and number > maximum:
        raise SettingError(f"{name}: expected at most {maximum}; got {number}")
    return number


def env_float(
    name: str,
    default: float,
    *,
    minimum: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> float:
    value = _raw(name, environ)
    if value in (None, ""):
        return default
    try:
        number = float(value)
    except ValueError:
        raise SettingError(f"{name}: expected a number; got {value!r}") from None
    if minimum is not None and number < minimum:
        raise SettingError(f"{name}: expected at least {minimum}; got {number}")
    return number


def env_list(
    name: str, default: list[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    value = _raw(name, environ)
    if value in (None, ""):
        return list(default)
    return [item.strip() for item in value.split(",") if item.strip()]


def env_path(name: str, default: Path, *, environ: Mapping[str, str] | None = None) -> Path:
    value = _raw(name, environ)
    if value in (None, ""):
        return default
    return Path(value).expanduser()


def env_choice(
    name: str, default: str, choices: tuple[str, ...], *, environ: Mapping[str, str] | None = None
) -> str:
    value = _raw(name, environ)
    if value in (None, ""):
        return default
    if value not in choices:
        raise SettingError(f"{name}: expected one of {', '.join(choices)}; got {value!r}")
    return value


@dataclass(frozen=True)
class DatabaseURL:
    engine: str
    name: str
    user: str = ""
    password: str = ""
    host: str = ""
    port: str = ""

    def django(self) -> dict[str, object]:
        config: dict[str, object] = {"ENGINE": self.engine, "NAME": self.name}
        if self.engine.endswith("postgresql"):
            config.update(
                USER=self.user,
                PASSWORD=self.password,
                HOST=self.host,
                PORT=self.port,
                CONN_MAX_AGE=60,
                CONN_HEALTH_CHECKS=True,
            )
        return config


def parse_database_url(name: str, url: str) -> DatabaseURL:
    """Parse ``postgres://user:pass@host:port/db`` or ``sqlite:///abs/path``."""
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        database = unquote(parts.path.lstrip("/"))
        if not database:
            raise SettingError(f"{name}: expected a database name in the URL path; got {url!r}")
        try:
            port = parts.port
        except ValueError:
            raise SettingError(f"{name}: the port in {parts.netloc!r} is not a number") from None
        return DatabaseURL(
            engine="django.db.backends.postgresql",
            name=database,
            user=unquote(parts.username or ""),
            password=unquote(parts.password or ""),
            host=parts.hostname or "",
            port=str(port or ""),
        )
    if parts.scheme == "sqlite":
        path = unquote(parts.path)
        if not path:
            raise SettingError(f"{name}: expected sqlite:///absolute/path; got {url!r}")
        return DatabaseURL(engine="bearpit.sqlite", name=path)
    raise SettingError(
        f"{name}: expected a postgres:// or sqlite:/// URL; got scheme {parts.scheme or '(none)'!r}"
    )
