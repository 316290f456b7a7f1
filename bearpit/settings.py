"""Django settings, read from ``BEARPIT_*`` environment variables.

Two shapes share this file:

* the **embedded default**: SQLite under ``BEARPIT_HOME``, no Redis, Celery tasks
  run in-process, an in-memory channel layer;
* **production**: ``BEARPIT_DATABASE_URL`` (PostgreSQL) and ``BEARPIT_REDIS_URL``
  (Celery broker and the Channels layer).
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import sys
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from bearpit import env, production

BASE_DIR = Path(__file__).resolve().parent.parent

try:
    BEARPIT_HOME = env.env_path("BEARPIT_HOME", Path.home() / ".bearpit")
    DEBUG = env.env_bool("BEARPIT_DEBUG", False)
    _database_url = env.env_str("BEARPIT_DATABASE_URL")
    REDIS_URL = env.env_str("BEARPIT_REDIS_URL")
    ALLOWED_HOSTS = env.env_list("BEARPIT_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
    _secret_key = env.env_str("BEARPIT_SECRET_KEY")
    BEARPIT_SCENARIOS_DIR = env.env_path("BEARPIT_SCENARIOS_DIR", BEARPIT_HOME / "scenarios")
    BEARPIT_EXAMPLES_DIR = env.env_path("BEARPIT_EXAMPLES_DIR", BASE_DIR / "examples")
    BEARPIT_MATRIX_SERVER_NAME = env.env_str("BEARPIT_MATRIX_SERVER_NAME", "bearpit.local") or ""
    BEARPIT_API_TOKEN = env.env_str("BEARPIT_API_TOKEN")
    BEARPIT_KEYSTORE_KEY = env.env_str("BEARPIT_KEYSTORE_KEY")
    BEARPIT_PROVIDER = env.env_str("BEARPIT_PROVIDER")
    BEARPIT_SANDBOX = env.env_choice("BEARPIT_SANDBOX", "bwrap", ("bwrap", "docker", "process"))
    # Forge: per-agent sandbox caps and the host uid range agents run as.
    BEARPIT_SANDBOX_MEMORY_MB = env.env_int("BEARPIT_SANDBOX_MEMORY_MB", 4096, minimum=64)
    BEARPIT_SANDBOX_PIDS = env.env_int("BEARPIT_SANDBOX_PIDS", 512, minimum=16)
    BEARPIT_SANDBOX_CPUS = env.env_float("BEARPIT_SANDBOX_CPUS", 2.0, minimum=0.05)
    BEARPIT_SANDBOX_DISK_MB = env.env_int("BEARPIT_SANDBOX_DISK_MB", 1024, minimum=8)
    BEARPIT_SANDBOX_SHARED_DISK_MB = env.env_int("BEARPIT_SANDBOX_SHARED_DISK_MB", 1024, minimum=8)
    BEARPIT_SANDBOX_UID_BASE = env.env_int(
        "BEARPIT_SANDBOX_UID_BASE", 200000, minimum=1000, maximum=2**31 - 1_000_000
    )
    BEARPIT_SANDBOX_UID_COUNT = env.env_int(
        "BEARPIT_SANDBOX_UID_COUNT", 10000, minimum=1, maximum=1_000_000
    )
    BEARPIT_SANDBOX_EXEC_TIMEOUT = env.env_float("BEARPIT_SANDBOX_EXEC_TIMEOUT", 90.0, minimum=1)
    BEARPIT_SANDBOX_STOP_GRACE = env.env_float("BEARPIT_SANDBOX_STOP_GRACE", 5.0, minimum=0)
    BEARPIT_DOCKER_URL = env.env_str("BEARPIT_DOCKER_URL")
    BEARPIT_DOCKER_IMAGE = (
        env.env_str("BEARPIT_DOCKER_IMAGE", "bearpit-agent:latest") or "bearpit-agent:latest"
    )
    BEARPIT_MAX_ACTIVE_REALMS = env.env_int("BEARPIT_MAX_ACTIVE_REALMS", 6, minimum=1)
    BEARPIT_OPERATOR_USER = env.env_str("BEARPIT_OPERATOR_USER", "operator") or "operator"
    BEARPIT_TICK_SECONDS = env.env_float("BEARPIT_TICK_SECONDS", 2.0, minimum=0.05)
    # Worker hosts (realms/hosts): this worker's id (required in production), how many
    # live realms it takes, how often it beats, and when a silent host counts as dead.
    BEARPIT_HOST_ID = env.env_str("BEARPIT_HOST_ID")
    BEARPIT_HOST_CAPACITY = env.env_int("BEARPIT_HOST_CAPACITY", 4, minimum=1)
    BEARPIT_HOST_HEARTBEAT_S = env.env_float("BEARPIT_HOST_HEARTBEAT_S", 2.0, minimum=0.1)
    BEARPIT_HOST_DEAD_AFTER = env.env_float("BEARPIT_HOST_DEAD_AFTER", 15.0, minimum=0.5)
    # Ledger gateway: TCP port (the Unix socket is always BEARPIT_HOME/run/gateway.sock),
    # upstream timeout, the max_tokens reserved for when a call names none, DB threads,
    # and the largest request body it reads (bigger ones get a 413 unread).
    BEARPIT_GATEWAY_PORT = env.env_int("BEARPIT_GATEWAY_PORT", 8790, minimum=0)
    BEARPIT_GATEWAY_UPSTREAM_TIMEOUT = env.env_float(
        "BEARPIT_GATEWAY_UPSTREAM_TIMEOUT", 600.0, minimum=0.1
    )
    BEARPIT_GATEWAY_DEFAULT_MAX_TOKENS = env.env_int(
        "BEARPIT_GATEWAY_DEFAULT_MAX_TOKENS", 4096, minimum=1
    )
    BEARPIT_GATEWAY_DB_THREADS = env.env_int("BEARPIT_GATEWAY_DB_THREADS", 8, minimum=1)
    BEARPIT_GATEWAY_MAX_BODY_BYTES = env.env_int(
        "BEARPIT_GATEWAY_MAX_BODY_BYTES", 16 * 1024 * 1024, minimum=1024
    )
    # Record every model call of a realm (requests and responses, for replay and fork);
    # a realm's run_config ``record_calls`` overrides it (docs/research.md).
    BEARPIT_RECORD_CALLS = env.env_bool("BEARPIT_RECORD_CALLS", True)
    # Scribe, the authoring assistant: the provider profile and tier it calls through the
    # gateway (the active profile when unset), the cap of each session's own key, how many
    # model calls one message may take, the gateway it calls (a base URL, or the path of
    # the gateway's Unix socket; BEARPIT_HOME/run/gateway.sock when unset), and the script
    # it answers from when the profile is the scripted provider.
    BEARPIT_SCRIBE_PROVIDER = env.env_str("BEARPIT_SCRIBE_PROVIDER")
    BEARPIT_SCRIBE_TIER = env.env_choice(
        "BEARPIT_SCRIBE_TIER", "large", ("small", "medium", "large")
    )
    BEARPIT_SCRIBE_CAP_USD = env.env_float("BEARPIT_SCRIBE_CAP_USD", 2.0, minimum=0)
    BEARPIT_SCRIBE_MAX_STEPS = env.env_int("BEARPIT_SCRIBE_MAX_STEPS", 24, minimum=1)
    BEARPIT_SCRIBE_GATEWAY = env.env_str("BEARPIT_SCRIBE_GATEWAY")
    BEARPIT_SCRIBE_OFFLINE_SCRIPT = env.env_path(
        "BEARPIT_SCRIBE_OFFLINE_SCRIPT", BASE_DIR / "scribe" / "offline.yaml"
    )
    # Signs realmtools tokens and derives the escrow sealing key; derived from
    # SECRET_KEY when unset. Rotating it invalidates live tokens and sealed payloads.
    BEARPIT_REALMTOOLS_SECRET = env.env_str("BEARPIT_REALMTOOLS_SECRET")
    if BEARPIT_REALMTOOLS_SECRET is not None and len(BEARPIT_REALMTOOLS_SECRET) < 32:
        raise env.SettingError(
            "BEARPIT_REALMTOOLS_SECRET: expected at least 32 characters; "
            f"got {len(BEARPIT_REALMTOOLS_SECRET)}"
        )
    # Addresses web_fetch may reach although they are not public (a mirror on the
    # operator's own network, a test's local server): exact addresses, never ranges.
    BEARPIT_WEB_FETCH_ALLOW_ADDRESSES = env.env_list("BEARPIT_WEB_FETCH_ALLOW_ADDRESSES", [])
    for _address in BEARPIT_WEB_FETCH_ALLOW_ADDRESSES:
        try:
            ipaddress.ip_address(_address)
        except ValueError:
            raise env.SettingError(
                "BEARPIT_WEB_FETCH_ALLOW_ADDRESSES: expected IP addresses separated by commas; "
                f"got {_address!r}"
            ) from None
    DATABASE = (
        env.parse_database_url("BEARPIT_DATABASE_URL", _database_url) if _database_url else None
    )
    production.check_redis_url(REDIS_URL)
    production.check_host_id(BEARPIT_HOST_ID)
    # Production refuses the embedded default's generated secrets and open broker.
    BEARPIT_PRODUCTION = env.env_bool("BEARPIT_PRODUCTION", False)
    if BEARPIT_PRODUCTION:
        production.check_production(
            debug=DEBUG,
            database=DATABASE,
            redis_url=REDIS_URL,
            secret_key=_secret_key,
            keystore_key=BEARPIT_KEYSTORE_KEY,
        )
except env.SettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc

EMBEDDED = DATABASE is None

# Herald (the Matrix bus). Without BEARPIT_MATRIX_URL the platform runs its own Synapse
# under BEARPIT_HOME/homeserver; with it, BEARPIT_MATRIX_REGISTRATION names the
# application-service registration the external homeserver loaded.
try:
    BEARPIT_MATRIX_URL = env.env_str("BEARPIT_MATRIX_URL")
    BEARPIT_MATRIX_REGISTRATION = env.env_path(
        "BEARPIT_MATRIX_REGISTRATION", BEARPIT_HOME / "homeserver" / "registration.yaml"
    )
    # 0 = a free port chosen at each start; clients use the Unix socket anyway.
    BEARPIT_MATRIX_PORT = env.env_int("BEARPIT_MATRIX_PORT", 0, minimum=0, maximum=65535)
    # Where the homeserver pushes application-service transactions (our ASGI app).
    BEARPIT_PLATFORM_PORT = env.env_int("BEARPIT_PLATFORM_PORT", 8765, minimum=1, maximum=65535)
except env.SettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc

# A local model (the `local` provider). With BEARPIT_LOCAL_MODEL naming a GGUF file, the
# embedded platform serves it with llama.cpp on 127.0.0.1:BEARPIT_LOCAL_PORT; without it the
# `local` profile's api_base names a server already running. Slots are parallel requests the
# server answers (the gateway queues the rest): 0 sizes them to the realm, one per agent up to
# BEARPIT_LOCAL_MAX_SLOTS. Context is per slot, max tokens caps replies.
try:
    BEARPIT_LOCAL_MODEL = env.env_str("BEARPIT_LOCAL_MODEL")
    BEARPIT_LOCAL_PORT = env.env_int("BEARPIT_LOCAL_PORT", 8791, minimum=1, maximum=65535)
    BEARPIT_LOCAL_SLOTS = env.env_int("BEARPIT_LOCAL_SLOTS", 0, minimum=0, maximum=64)
    BEARPIT_LOCAL_MAX_SLOTS = env.env_int("BEARPIT_LOCAL_MAX_SLOTS", 4, minimum=1, maximum=64)
    BEARPIT_LOCAL_CONTEXT = env.env_int("BEARPIT_LOCAL_CONTEXT", 8192, minimum=1024)
    BEARPIT_LOCAL_MAX_TOKENS = env.env_int("BEARPIT_LOCAL_MAX_TOKENS", 256, minimum=16)
    BEARPIT_LOCAL_THREADS = env.env_int("BEARPIT_LOCAL_THREADS", 0, minimum=0, maximum=512)
    BEARPIT_LOCAL_START_TIMEOUT = env.env_float("BEARPIT_LOCAL_START_TIMEOUT", 120.0, minimum=1)
    BEARPIT_LOCAL_TEMPERATURE = env.env_float("BEARPIT_LOCAL_TEMPERATURE", 0.8, minimum=0)
    BEARPIT_LOCAL_MIN_TURN_SECONDS = env.env_float(
        "BEARPIT_LOCAL_MIN_TURN_SECONDS", 120.0, minimum=0
    )
except env.SettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc

# The Warden and the realm lifecycle: the grace between REALM_ENDING and teardown, how
# long a worker's claim on a realm's tick lasts, and how long a live count line waits.
try:
    BEARPIT_CONCLUDE_GRACE_S = env.env_float("BEARPIT_CONCLUDE_GRACE_S", 10.0, minimum=0)
    BEARPIT_TICK_CLAIM_S = env.env_float("BEARPIT_TICK_CLAIM_S", 30.0, minimum=1)
    BEARPIT_PROGRESS_EVERY_S = env.env_float("BEARPIT_PROGRESS_EVERY_S", 5.0, minimum=0.5)
except env.SettingError as exc:
    raise ImproperlyConfigured(str(exc)) from exc


# The platform's state (database, chronicle, logs, keys) is its own user's alone: new
# files are 0600 and directories 0700; what a sandbox must read is opened up one by one.
os.umask(0o077)
BEARPIT_HOME.mkdir(parents=True, exist_ok=True, mode=0o700)
if BEARPIT_HOME.stat().st_uid == os.geteuid():
    BEARPIT_HOME.chmod(0o700)


def _home_secret(path: Path) -> str:
    """A secret generated once and kept, mode 0600, under BEARPIT_HOME."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(value, encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(path)
    return value


SECRET_KEY = _secret_key or _home_secret(BEARPIT_HOME / "secret-key")

# Daphne's app only replaces ``runserver`` with its ASGI one, and importing it starts
# Twisted (most of a second), so every other command goes without it.
_DAPHNE_APP = ["daphne"] if sys.argv[1:2] == ["runserver"] else []

INSTALLED_APPS = [
    *_DAPHNE_APP,
    "bearpit.adminsite.AdminConfig",  # the admin, discovered on first use
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's assets, served locally (no CDN)
    "channels",
    "django_htmx",
    "chronicle",
    "realms",
    "realms.herald",
    "realms.forge",
    "realms.realmtools",
    "realms.warden",
    "ledger",
    "scribe",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "bearpit.urlguard.QueryTokenRefusedMiddleware",
    "bearpit.urlguard.UrlCharactersMiddleware",
    "bearpit.static.StaticFilesMiddleware",
    "bearpit.api_errors.JsonErrorsMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Django's cap on a request body read into memory. It must take the homeserver's largest
# application-service transaction (100 events of at most 64 KiB, plus ephemeral events):
# refused, it would be retried forever and stall the bus mirror. The API's JSON bodies
# have their own, smaller limit (bearpit.jsonbody.MAX_JSON_BODY_BYTES).
DATA_UPLOAD_MAX_MEMORY_SIZE = 16 * 1024 * 1024
# A package or skill folder upload carries up to the library's 500 files.
DATA_UPLOAD_MAX_NUMBER_FILES = 500

ROOT_URLCONF = "bearpit.urls"
WSGI_APPLICATION = "bearpit.wsgi.application"
ASGI_APPLICATION = "bearpit.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "realms.console.context.console",
            ],
        },
    },
]

if DATABASE is None:
    BEARPIT_HOME.mkdir(parents=True, exist_ok=True)
    DATABASES: dict[str, dict[str, object]] = {
        "default": {
            # Django's SQLite backend plus what the Chronicle's append-only triggers need.
            "ENGINE": "bearpit.sqlite",
            "NAME": BEARPIT_HOME / "bearpit.sqlite3",
            # WAL lets the gateway, the bus mirror and the Warden write while readers read;
            # IMMEDIATE transactions take the write lock up front so concurrent writers
            # queue instead of failing on a lock upgrade.
            "OPTIONS": {
                "timeout": 30,
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
        }
    }
else:
    DATABASES = {"default": DATABASE.django()}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BEARPIT_HOME / "static"
# The console's stylesheets, scripts and vendored libraries (static/vendor/manifest.json).
STATICFILES_DIRS = [BASE_DIR / "static"]
# WhiteNoise (bearpit.static) serves the admin's stylesheets in every mode, DEBUG or not,
# from the apps' static folders (the finders), so nobody runs collectstatic; a deployment
# that collects into STATIC_ROOT is served from there as well.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# The operator's browser session (what /login starts; /admin/ and the API take it): never
# readable by scripts, never sent on a request another site starts.
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Strict"
CSRF_COOKIE_SAMESITE = "Strict"

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "realms.api.schema.OperatorAutoSchema",
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": [
        "bearpit.jsonbody.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "bearpit.api_errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Bearpit API",
    "DESCRIPTION": "The control plane of a Bearpit installation. Every route needs the "
    "operator: the operator token in an `Authorization: Bearer` header, or the browser "
    "session that `/login?token=…` starts.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Enums named for what they are, so that two routes' "kind" or "source" never collide.
    "ENUM_NAME_OVERRIDES": {
        "TierEffortEnum": "ledger.api.serializers.EFFORTS",
        "ProfileSourceEnum": "ledger.api.serializers.PROFILE_SOURCES",
        "ProfileTransportEnum": "ledger.api.serializers.TRANSPORTS",
        "AgentToolKindEnum": "ledger.api.serializers.TOOL_KINDS",
        "SandboxBackendEnum": "realms.forge.readiness.BACKENDS",
    },
}

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    # One process, several event loops (bearpit.layers says why Channels' own will not do).
    CHANNEL_LAYERS = {"default": {"BACKEND": "bearpit.layers.LoopSafeInMemoryChannelLayer"}}

# Celery: with a broker the tasks go to workers; without one (embedded default) they
# run in the calling process through the same code path.
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_ALWAYS_EAGER = REDIS_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
# Beat fans out one Warden tick per running realm every BEARPIT_TICK_SECONDS, and moves
# the batches the API or the console started along as often.
CELERY_BEAT_SCHEDULE = {
    "warden-tick-all": {"task": "warden.tick_all", "schedule": BEARPIT_TICK_SECONDS},
    # A surviving host looks for hosts whose heartbeat stopped (realms/hosts/dead.py).
    "hosts-check": {"task": "hosts.check", "schedule": BEARPIT_HOST_HEARTBEAT_S},
    "batches-advance-all": {"task": "batches.advance_all", "schedule": BEARPIT_TICK_SECONDS},
}
# A task that touches a realm's sandboxes goes to its host's own queue, ``host.<id>``;
# every worker consumes the shared queue and its own (realms/hosts/routing.py).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = ("realms.hosts.routing.route",)
# Under the home, not the working directory (read-only in the image); its age is beat's
# health check (deploy/healthcheck.py).
CELERY_BEAT_SCHEDULE_FILENAME = str(BEARPIT_HOME / "beat-schedule")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "filters": {"expected_misses": {"()": "realms.herald.logfilters.ExpectedQueryMisses"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "django.request": {"filters": ["expected_misses"]},
        "bearpit": {"level": "INFO"},
        "realms": {"level": "INFO"},
        "ledger": {"level": "INFO"},
        "chronicle": {"level": "INFO"},
    },
}

if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("BEARPIT_ALLOWED_HOSTS: expected at least one host name; got none")
