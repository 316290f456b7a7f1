from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bearpit import env


def test_bool_accepts_the_usual_spellings():
    assert env.env_bool("X", False, environ={"X": "Yes"}) is True
    assert env.env_bool("X", True, environ={"X": "0"}) is False
    assert env.env_bool("X", True, environ={}) is True


def test_bool_refuses_nonsense_with_the_variable_named():
    with pytest.raises(env.SettingError, match=r"X: expected a boolean .* got 'maybe'"):
        env.env_bool("X", False, environ={"X": "maybe"})


def test_int_bounds_and_parse_errors():
    assert env.env_int("N", 3, environ={"N": "7"}) == 7
    with pytest.raises(env.SettingError, match="N: expected a whole number; got 'seven'"):
        env.env_int("N", 3, environ={"N": "seven"})
    with pytest.raises(env.SettingError, match="N: expected at least 1; got 0"):
        env.env_int("N", 3, minimum=1, environ={"N": "0"})


def test_file_variant_reads_a_secret_from_a_file(tmp_path: Path):
    secret = tmp_path / "s"
    secret.write_text("from-file\n")
    assert env.env_str("S", environ={"S_FILE": str(secret)}) == "from-file"
    with pytest.raises(env.SettingError, match="S_FILE: cannot read"):
        env.env_str("S", environ={"S_FILE": str(tmp_path / "missing")})


def test_database_urls():
    pg = env.parse_database_url("D", "postgres://pit:p%40ss@db.example:5433/bearpit")
    assert pg.django()["NAME"] == "bearpit"
    assert pg.password == "p@ss"
    assert pg.port == "5433"
    assert env.parse_database_url("D", "sqlite:///tmp/x.db").name == "/tmp/x.db"
    with pytest.raises(env.SettingError, match="D: expected a postgres:// or sqlite:/// URL"):
        env.parse_database_url("D", "mysql://x/y")
    with pytest.raises(env.SettingError, match="expected a database name"):
        env.parse_database_url("D", "postgres://host/")


def test_choice():
    with pytest.raises(env.SettingError, match="S: expected one of a, b; got 'c'"):
        env.env_choice("S", "a", ("a", "b"), environ={"S": "c"})


def test_a_bad_setting_stops_django_with_a_clear_message(tmp_path: Path, repo_root: Path):
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=repo_root,
        env={"BEARPIT_HOME": str(tmp_path), "BEARPIT_DEBUG": "perhaps", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "BEARPIT_DEBUG: expected a boolean" in result.stderr


def test_production_shape_reads_database_and_redis(tmp_path: Path, repo_root: Path):
    code = (
        "from django.conf import settings as s;"
        "print(s.DATABASES['default']['ENGINE'], s.CHANNEL_LAYERS['default']['BACKEND'],"
        " s.CELERY_BROKER_URL, s.CELERY_TASK_ALWAYS_EAGER)"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=repo_root,
        env={
            "BEARPIT_HOME": str(tmp_path),
            "BEARPIT_DATABASE_URL": "postgres://postgres@127.0.0.1:5432/bearpit",
            "BEARPIT_REDIS_URL": "redis://127.0.0.1:6379/3",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.postgresql",
        "channels_redis.core.RedisChannelLayer",
        "redis://127.0.0.1:6379/3",
        "False",
    ]
