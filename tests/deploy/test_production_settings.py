"""BEARPIT_PRODUCTION: what a deployment cannot do without stops every process with one
line naming the setting, and the embedded default is left as it was."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from bearpit import production
from bearpit.env import SettingError, parse_database_url

REPO = Path(__file__).resolve().parents[2]
PG = parse_database_url("D", "postgres://pit:pw@db:5432/bearpit")
GOOD = {
    "debug": False,
    "database": PG,
    "redis_url": "redis://:s3cret@redis:6379/0",
    "secret_key": "k" * 40,
    "keystore_key": Fernet.generate_key().decode(),
}


def test_a_complete_production_configuration_passes():
    production.check_production(**GOOD)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"database": None}, "BEARPIT_DATABASE_URL: required"),
        (
            {"database": parse_database_url("D", "sqlite:///tmp/x.db")},
            "BEARPIT_DATABASE_URL: expected a postgres:// URL",
        ),
        ({"redis_url": None}, "BEARPIT_REDIS_URL: required"),
        ({"redis_url": "redis://redis:6379/0"}, "BEARPIT_REDIS_URL: expected a password"),
        ({"redis_url": "redis://user:@redis:6379/0"}, "BEARPIT_REDIS_URL: expected a password"),
        ({"secret_key": None}, "BEARPIT_SECRET_KEY: required"),
        ({"secret_key": "short"}, "BEARPIT_SECRET_KEY: expected at least 32 characters; got 5"),
        ({"keystore_key": None}, "BEARPIT_KEYSTORE_KEY: required"),
        ({"keystore_key": "not-a-fernet-key"}, "BEARPIT_KEYSTORE_KEY: expected a Fernet key"),
    ],
)
def test_each_missing_or_bad_setting_is_named(change, message):
    with pytest.raises(SettingError) as caught:
        production.check_production(**{**GOOD, **change})
    assert str(caught.value).startswith(message)


def test_debug_lets_the_secret_key_be_generated():
    production.check_production(**{**GOOD, "debug": True, "secret_key": None})  # type: ignore[arg-type]


def test_the_broker_url_is_checked_in_every_deployment():
    production.check_redis_url(None)
    production.check_redis_url("redis://127.0.0.1:6379/1")
    with pytest.raises(SettingError, match="BEARPIT_REDIS_URL: expected a redis://"):
        production.check_redis_url("http://127.0.0.1:6379")
    with pytest.raises(SettingError, match="is not a number"):
        production.check_redis_url("redis://127.0.0.1:63x9/0")


def _start(argv: list[str], home: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "bearpit.settings",
        "BEARPIT_HOME": str(home),
        **environ,
    }
    return subprocess.run(
        argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=90, check=False
    )


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "manage.py", "pit_gateway"],
        [sys.executable, "-m", "celery", "-A", "bearpit", "worker"],
        [sys.executable, "-m", "daphne", "bearpit.asgi:application"],
        [sys.executable, "-m", "bearpit.cli", "realms"],
    ],
    ids=["manage.py", "celery", "asgi", "pit"],
)
def test_every_kind_of_process_refuses_with_one_line(argv, tmp_path):
    done = _start(
        argv,
        tmp_path,
        BEARPIT_PRODUCTION="true",
        BEARPIT_DATABASE_URL="postgres://pit:pw@127.0.0.1:1/bearpit",
        BEARPIT_REDIS_URL="redis://127.0.0.1:1/0",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "cannot start: BEARPIT_REDIS_URL: expected a password" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr


def test_without_production_the_embedded_default_still_starts(tmp_path):
    done = _start([sys.executable, "manage.py", "check"], tmp_path)
    assert done.returncode == 0, done.stderr
