"""Configuration of the embedded homeserver and of the application service.

Everything lives under ``BEARPIT_HOME/homeserver/``: the Synapse config, its
signing key, the application-service registration (tokens generated once and
kept), the gate module's allow-list and Synapse's own data. Writing the config
again is harmless: secrets already on disk are reused.
"""

from __future__ import annotations

import base64
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from django.conf import settings

from bearpit.env import DatabaseURL
from realms.herald.localparts import SEPARATOR, USER_PREFIX

AS_ID = "bearpit-herald"
SYSTEM_LOCALPART = "bp_system"
GATE_MODULE = "realms.herald.gate.HeraldGate"
SQLITE_SYNC_MODULE = "realms.herald.sqlitesync.SqliteSync"
SQLITE_INLINE_MODULE = "realms.herald.sqliteinline.SqliteInline"
EVENT_SCHEMAS_MODULE = "realms.herald.eventschemas.EventSchemas"
FILTER_CHECK_MODULE = "realms.herald.filtercheck.FilterCheck"
DELAYED_EVENTS_MODULE = "realms.herald.delayedevents.DelayedEventsIdle"

# Bots post in bursts; Synapse's defaults answer a dozen quick sends with 429.
_GENEROUS = {"per_second": 1000, "burst_count": 10000}
RATE_LIMITS: dict[str, Any] = {
    "rc_message": _GENEROUS,
    "rc_registration": _GENEROUS,
    "rc_login": {"address": _GENEROUS, "account": _GENEROUS, "failed_attempts": _GENEROUS},
    "rc_joins": {"local": _GENEROUS, "remote": _GENEROUS},
    "rc_joins_per_room": _GENEROUS,
    "rc_invites": {"per_room": _GENEROUS, "per_user": _GENEROUS, "per_issuer": _GENEROUS},
    "rc_room_creation": _GENEROUS,
    "rc_admin_redaction": _GENEROUS,
    "rc_3pid_validation": _GENEROUS,
    "rc_presence": {"per_user": _GENEROUS},
    "rc_delayed_event_mgmt": _GENEROUS,
    "rc_reports": _GENEROUS,
}


@dataclass(frozen=True)
class Registration:
    """The parts of the application-service registration the platform uses."""

    id: str
    as_token: str
    hs_token: str
    sender_localpart: str
    url: str


@dataclass(frozen=True)
class HomeserverConfig:
    """Where and how the embedded homeserver runs."""

    home: Path
    server_name: str
    port: int
    platform_port: int
    database: DatabaseURL | None = None

    @classmethod
    def from_settings(cls, **overrides: Any) -> HomeserverConfig:
        config = cls(
            home=Path(settings.BEARPIT_HOME),
            server_name=settings.BEARPIT_MATRIX_SERVER_NAME,
            port=settings.BEARPIT_MATRIX_PORT,
            platform_port=settings.BEARPIT_PLATFORM_PORT,
            database=settings.DATABASE,
        )
        return replace(config, **overrides)

    @property
    def data_dir(self) -> Path:
        return self.home / "homeserver"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "homeserver.yaml"

    @property
    def registration_path(self) -> Path:
        return self.data_dir / "registration.yaml"

    @property
    def gate_path(self) -> Path:
        return self.data_dir / "gate.json"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "homeserver.log"

    @property
    def stderr_path(self) -> Path:
        return self.data_dir / "stderr.log"

    @property
    def pid_path(self) -> Path:
        return self.data_dir / "homeserver.pid"

    @property
    def socket_path(self) -> Path:
        return self.home / "run" / "homeserver.sock"

    @property
    def signing_key_path(self) -> Path:
        return self.data_dir / f"{self.server_name}.signing.key"

    @property
    def synapse_database_name(self) -> str | None:
        return f"{self.database.name}_synapse" if self.database else None


def _write_private(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(path)


def _kept_secret(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        value = secrets.token_urlsafe(32)
        _write_private(path, value)
        return value


def _ensure_signing_key(path: Path) -> None:
    """An ed25519 key in Synapse's format: ``ed25519 <key id> <unpadded base64 seed>``."""
    if path.exists():
        return
    seed = base64.b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    _write_private(path, f"ed25519 a_{secrets.token_hex(2)} {seed}\n")


def load_registration(path: Path | None = None) -> Registration:
    """Read the registration YAML (the embedded one unless a path is given)."""
    path = path or Path(settings.BEARPIT_MATRIX_REGISTRATION)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: no application-service registration; run `manage.py pit_homeserver "
            "--write-config` or set BEARPIT_MATRIX_REGISTRATION"
        ) from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a YAML mapping")
    missing = [k for k in ("as_token", "hs_token", "sender_localpart", "url") if not data.get(k)]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    return Registration(
        id=str(data.get("id") or AS_ID),
        as_token=str(data["as_token"]),
        hs_token=str(data["hs_token"]),
        sender_localpart=str(data["sender_localpart"]),
        url=str(data["url"]),
    )


def _write_registration(config: HomeserverConfig) -> None:
    existing: dict[str, Any] = {}
    if config.registration_path.exists():
        existing = yaml.safe_load(config.registration_path.read_text(encoding="utf-8")) or {}
    registration = {
        "id": AS_ID,
        "url": f"http://127.0.0.1:{config.platform_port}",
        "as_token": existing.get("as_token") or secrets.token_urlsafe(32),
        "hs_token": existing.get("hs_token") or secrets.token_urlsafe(32),
        "sender_localpart": SYSTEM_LOCALPART,
        "rate_limited": False,
        "namespaces": {
            "users": [{"exclusive": True, "regex": f"@{USER_PREFIX}.*"}],
            "aliases": [{"exclusive": True, "regex": f"#{USER_PREFIX}.*"}],
            "rooms": [],
        },
    }
    _write_private(config.registration_path, yaml.safe_dump(registration, sort_keys=False))


def _database_section(config: HomeserverConfig) -> dict[str, Any]:
    if config.database is None:
        return {"name": "sqlite3", "args": {"database": str(config.data_dir / "synapse.sqlite3")}}
    db = config.database
    args: dict[str, Any] = {"database": config.synapse_database_name, "cp_min": 1, "cp_max": 5}
    for key, value in (("user", db.user), ("password", db.password), ("host", db.host)):
        if value:
            args[key] = value
    if db.port:
        args["port"] = int(db.port)
    return {"name": "psycopg2", "args": args}


def _log_config(config: HomeserverConfig) -> str:
    log_config = {
        "version": 1,
        "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {
            "file": {
                "class": "logging.handlers.RotatingFileHandler",
                "formatter": "plain",
                "filename": str(config.log_path),
                "maxBytes": 10_000_000,
                "backupCount": 2,
                "encoding": "utf8",
            }
        },
        "filters": {"per_listener": {"()": "realms.herald.logfilters.ClientApiPerListener"}},
        "loggers": {
            "synapse.storage.SQL": {"level": "WARNING"},
            "synapse.util.metrics": {"filters": ["per_listener"]},
        },
        "root": {"level": "WARNING", "handlers": ["file"]},
        "disable_existing_loggers": False,
    }
    return yaml.safe_dump(log_config)


def gate_module_config(config: HomeserverConfig, operator_localpart: str) -> dict[str, Any]:
    return {
        "exempt": [
            f"@{SYSTEM_LOCALPART}:{config.server_name}",
            f"@{operator_localpart}:{config.server_name}",
        ],
        "allow_file": str(config.gate_path),
    }


def operator_localpart() -> str:
    # Never the agents' separator, so the operator can never be mistaken for an agent.
    name = normalise_localpart(settings.BEARPIT_OPERATOR_USER).replace(SEPARATOR, "_")
    return f"{USER_PREFIX}{name}"


def normalise_localpart(value: str) -> str:
    """Lower-case, and anything Matrix does not allow in a localpart becomes ``_``."""
    allowed = set("abcdefghijklmnopqrstuvwxyz0123456789._=-/+")
    return "".join(ch if ch in allowed else "_" for ch in value.lower()) or "_"


def write_config(config: HomeserverConfig) -> None:
    """Write (or refresh) every file the embedded homeserver needs."""
    config.data_dir.mkdir(parents=True, exist_ok=True)
    config.data_dir.chmod(0o700)
    config.socket_path.parent.mkdir(parents=True, exist_ok=True)
    (config.data_dir / "media").mkdir(exist_ok=True)
    _ensure_signing_key(config.signing_key_path)
    _write_registration(config)
    if not config.gate_path.exists():
        _write_private(config.gate_path, '{"side_channel_realms": []}\n')
    log_config_path = config.data_dir / "log.yaml"
    log_config_path.write_text(_log_config(config), encoding="utf-8")

    client = [{"names": ["client"], "compress": False}]
    homeserver: dict[str, Any] = {
        "server_name": config.server_name,
        "public_baseurl": f"http://127.0.0.1:{config.port}/",
        "listeners": [
            {
                "port": config.port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": client,
            },
            {"path": str(config.socket_path), "mode": 0o666, "type": "http", "resources": client},
        ],
        "database": _database_section(config),
        "log_config": str(log_config_path),
        "media_store_path": str(config.data_dir / "media"),
        "signing_key_path": str(config.signing_key_path),
        "macaroon_secret_key": _kept_secret(config.data_dir / "macaroon.secret"),
        "form_secret": _kept_secret(config.data_dir / "form.secret"),
        "report_stats": False,
        "enable_metrics": False,
        "enable_registration": False,
        "federation_domain_whitelist": [],
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "presence": {"enabled": False},
        # Agents read mentions from the events themselves: per-member push-rule
        # evaluation and notification counts on every message would be wasted work.
        "push": {"enabled": False},
        # A few dozen users in busy rooms: bigger caches cut the per-sync database work
        # (bench/bus.py, 10 agents at 5 msg/s: send p50 roughly halved).
        "caches": {"global_factor": 4.0},
        # Synapse runs the garbage collector itself, at small thresholds and often. Rarer
        # collections: ~19 instead of ~22 ms of CPU a message, 50 instead of 41-44 msg/s
        # flat out (bench/bus.py, fresh room).
        "gc_thresholds": [20000, 50, 50],
        "gc_min_interval": ["10s", "60s", "300s"],
        "url_preview_enabled": False,
        # Agents hold their own tokens: nothing they upload may land on the host's disk.
        "enable_media_repo": False,
        # Profiles and the user directory would show other realms' agents.
        "require_auth_for_profile_requests": True,
        "limit_profile_requests_to_users_who_share_rooms": True,
        "user_directory": {"enabled": False},
        # With the directory off nothing reads its tables, yet the homeserver would still
        # update them after every event (~2 % of it flat out, bench/bus.py): the duty goes
        # to a worker that never runs. Room statistics feed only the room directory and
        # admin listings, neither of which the bus uses.
        "update_user_directory_from_worker": "bearpit-none",
        "stats": {"enabled": False},
        # Federation is off (no federation listener, no allowed destinations), yet the
        # main process would still read every new event back and record a stream position
        # to work out which servers to send it to (~8 % of it flat out, bench/bus.py). An
        # empty list of senders stops that; Synapse then keeps federation-bound EDUs in a
        # queue it empties after five minutes.
        "federation_sender_instances": [],
        # Synapse sends the hs_token in the Authorization header; never in the URL.
        "use_appservice_legacy_authorization": False,
        "allow_public_rooms_without_auth": False,
        "allow_public_rooms_over_federation": False,
        "app_service_config_files": [str(config.registration_path)],
        "modules": [
            {
                "module": GATE_MODULE,
                "config": gate_module_config(config, operator_localpart()),
            },
            # Checking the constant m.mentions schema again on every message was ~8 % of
            # the homeserver's time (bench/bus.py); see realms/herald/eventschemas.py.
            {"module": EVENT_SCHEMAS_MODULE, "config": {}},
            # Per-event work nothing here needs: matching each event against a sync
            # filter through closures (~6 %), and the delayed-events job after every event
            # while delayed events are off (~7 %); see filtercheck.py and delayedevents.py.
            {"module": FILTER_CHECK_MODULE, "config": {}},
            {"module": DELAYED_EVENTS_MODULE, "config": {}},
            # On SQLite: one fsync per write transaction was the biggest cost of a message,
            # and handing every transaction to the database thread and back the next
            # (bench/bus.py); see realms/herald/sqlitesync.py and sqliteinline.py.
            *(
                [
                    {"module": SQLITE_SYNC_MODULE, "config": {}},
                    {"module": SQLITE_INLINE_MODULE, "config": {}},
                ]
                if config.database is None
                else []
            ),
        ],
        **RATE_LIMITS,
    }
    _write_private(config.config_path, yaml.safe_dump(homeserver, sort_keys=False))
