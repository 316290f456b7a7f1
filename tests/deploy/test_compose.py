"""deploy/compose.yaml and deploy/platform.Dockerfile, read as an engine would read them:
every process the stack needs is a service, each command exists, each variable the
platform services get is one the settings read, Redis wants a password, and the image
copies what the platform imports from folders that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography.fernet import Fernet
from django.core.management import get_commands

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PLATFORM = ("migrate", "web", "homeserver", "gateway", "realmtools", "worker", "beat")
LONG_RUNNING = PLATFORM[1:]


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return loaded


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def settings_names() -> set[str]:
    source = (REPO / "bearpit" / "settings.py").read_text()
    return set(re.findall(r'"(BEARPIT_[A-Z0-9_]+)"', source))


def interpolate(value: str, values: dict[str, str]) -> str:
    """Compose's ``${NAME}`` and ``${NAME:?message}`` forms, and ``$$`` for a dollar."""
    value = re.sub(r"\$\{([A-Z_]+)(?::\?[^}]*)?\}", lambda m: values[m.group(1)], value)
    return value.replace("$$", "$")


def test_every_process_of_the_stack_is_a_service():
    assert set(services()) == {"postgres", "redis", *PLATFORM}


@pytest.mark.parametrize("name", PLATFORM)
def test_each_platform_command_exists(name):
    argv = services()[name]["command"]
    if argv[:2] == ["python", "manage.py"]:
        assert argv[2] in get_commands(), f"{name}: no management command {argv[2]}"
    elif argv[0] == "celery":
        assert argv[1:3] == ["-A", "bearpit"] and argv[3] in ("worker", "beat")
    else:
        assert argv[0] == "daphne" and argv[-1] == "bearpit.asgi:application"
    assert shutil.which(argv[0], path=str(Path(sys.executable).parent)) or argv[0] == "python"


@pytest.mark.parametrize("name", LONG_RUNNING)
def test_each_long_running_service_has_its_health_check(name):
    test = services()[name]["healthcheck"]["test"]
    assert test == ["CMD", "python", "deploy/healthcheck.py", name]
    source = (DEPLOY / "healthcheck.py").read_text()
    assert f'"{name}": check_{name},' in source


def test_the_platform_reads_every_variable_its_services_get():
    known = settings_names()
    for name in PLATFORM:
        for variable in services()[name]["environment"]:
            assert variable in known, f"{name}: {variable} is read by no setting"
    for line in (DEPLOY / "env.example").read_text().splitlines():
        variable = line.split("=", 1)[0]
        if variable.startswith("BEARPIT_"):
            assert variable in known, f"env.example: {variable} is read by no setting"


def test_the_web_server_listens_where_the_homeserver_pushes():
    web = services()["web"]
    port = web["environment"]["BEARPIT_PLATFORM_PORT"]
    assert web["command"][web["command"].index("-p") + 1] == port
    assert web["ports"] == [f"127.0.0.1:{port}:{port}"]
    for name in PLATFORM[2:]:
        assert services()[name]["network_mode"] == "service:web"


def test_migrate_runs_before_the_platform_and_once():
    assert services()["migrate"]["restart"] == "no"
    web_needs = services()["web"]["depends_on"]
    assert web_needs["migrate"] == {"condition": "service_completed_successfully"}
    assert web_needs["redis"] == {"condition": "service_healthy"}


def test_redis_requires_the_password_the_platform_sends():
    values = {"POSTGRES_PASSWORD": "pgpw", "REDIS_PASSWORD": "redispw"}
    redis = services()["redis"]
    started = interpolate(" ".join(redis["command"]), values)
    assert '--requirepass "$REDIS_PASSWORD"' in started
    assert interpolate(redis["environment"]["REDIS_PASSWORD"], values) == "redispw"
    url = interpolate(services()["worker"]["environment"]["BEARPIT_REDIS_URL"], values)
    assert url == "redis://:redispw@redis:6379/0"
    assert "ports" not in redis and "ports" not in services()["postgres"]


def test_the_compose_environment_with_the_example_filled_in_passes_the_settings(tmp_path):
    """What an operator who fills in env.example gets: settings that load, with every
    secret blank one line naming the first one missing."""
    values = {"POSTGRES_PASSWORD": "pgpw", "REDIS_PASSWORD": "redispw"}
    example = {}
    for line in (DEPLOY / "env.example").read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            example[key] = value
    platform = {k: interpolate(str(v), values) for k, v in services()["web"]["environment"].items()}
    base = {
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "DJANGO_SETTINGS_MODULE": "bearpit.settings",
        **{k: v for k, v in example.items() if k.startswith("BEARPIT_")},
        **platform,
        "BEARPIT_HOME": str(tmp_path),
    }

    def check(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", "check"], cwd=REPO, env=env,
            capture_output=True, text=True, timeout=90, check=False,
        )  # fmt: skip

    blank = check(base)
    assert blank.returncode == 2
    assert blank.stderr.strip() == (
        "manage.py: cannot start: BEARPIT_SECRET_KEY: required when BEARPIT_PRODUCTION is on "
        "and BEARPIT_DEBUG is off"
    )
    secrets = {"BEARPIT_SECRET_KEY": "s" * 48}
    secrets["BEARPIT_KEYSTORE_KEY"] = Fernet.generate_key().decode()
    filled = check({**base, **secrets})
    assert filled.returncode == 0, filled.stderr


def dockerfile_copies() -> list[str]:
    sources = []
    for line in (DEPLOY / "platform.Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            sources.extend(line.split()[1:-1])
    return sources


def test_the_platform_image_copies_folders_that_exist():
    for source in dockerfile_copies():
        assert (REPO / source).exists(), f"platform.Dockerfile copies {source}, which is missing"


def test_the_platform_image_has_every_package_and_what_django_loads_from_disk():
    pyproject = (REPO / "pyproject.toml").read_text()
    packages = re.search(r"^packages = \[(.*)\]", pyproject, re.MULTILINE)
    assert packages is not None
    wanted = set(re.findall(r'"([a-z_]+)"', packages.group(1)))
    copied = set(dockerfile_copies())
    assert wanted | {"manage.py", "templates", "static", "examples"} <= copied
    assert "deploy/healthcheck.py" in copied
