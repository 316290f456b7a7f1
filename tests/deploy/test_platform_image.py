"""The platform image builds from this checkout with podman and no registry
(deploy/build-platform-image), and what it holds starts: the settings load, a production
setting left out stops a process with one line, the health check answers, and every
process's entry point imports."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.podman import BUILD_TIMEOUT_S, _build_lock, podman

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_TIMEOUT_S + 300)]

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "deploy" / "build-platform-image"
IMAGE_REPOSITORY = "localhost/bearpit-platform"
# What build-platform-image stages: a change to any of it is a new image.
INPUTS = (
    "pyproject.toml", "uv.lock", "README.md", "manage.py", "bearpit", "realms", "ledger",
    "chronicle", "scribe", "runtime", "templates", "static", "examples",
    "deploy/healthcheck.py", "deploy/platform.Dockerfile", "deploy/image-base.sh",
)  # fmt: skip


def run_limits() -> list[str]:
    """Explicit, modest limits: podman's defaults for open files and processes exceed what
    some hosts let it set (runc then refuses to start the container)."""
    return ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"]


def image_tag() -> str:
    digest = hashlib.sha256()
    for name in INPUTS:
        path = REPO / name
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for file in files:
            if "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            digest.update(str(file.relative_to(REPO)).encode() + b"\0" + file.read_bytes())
    return f"{IMAGE_REPOSITORY}:test-{digest.hexdigest()[:12]}"


@pytest.fixture(scope="module")
def platform_image() -> Iterator[str]:
    tag = image_tag()
    exists = subprocess.run([*podman(), "image", "exists", tag], check=False)
    if exists.returncode != 0:
        with _build_lock():
            built = subprocess.run(
                [str(BUILD_SCRIPT), tag], capture_output=True, text=True,
                timeout=BUILD_TIMEOUT_S, check=False,
            )  # fmt: skip
        assert built.returncode == 0, (built.stdout + built.stderr)[-6000:]
    listed = subprocess.run(
        [*podman(), "images", "--format", "{{.Repository}}:{{.Tag}}", IMAGE_REPOSITORY],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for name in listed.stdout.split():
        if name != tag and name.startswith(f"{IMAGE_REPOSITORY}:test-"):
            subprocess.run([*podman(), "rmi", name], capture_output=True, check=False)
    yield tag


def run_in(
    image: str, *argv: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    flags = [f"--env={k}={v}" for k, v in (env or {}).items()]
    return subprocess.run(
        [*podman(), "run", "--rm", "--network", "none", *run_limits(), *flags, image, *argv],
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip


def test_the_platform_image_loads_its_settings_and_every_entry_point(platform_image):
    done = run_in(
        platform_image, "sh", "-c",
        "python manage.py check"
        " && python -c 'import bearpit.asgi, bearpit.celery, daphne, synapse.app.homeserver'"
        " && test -f templates/console/base.html -a -d static/console",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_in_the_image_a_missing_production_setting_stops_with_one_line(platform_image):
    done = run_in(
        platform_image, "celery", "-A", "bearpit", "worker", env={"BEARPIT_PRODUCTION": "true"}
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        "celery: cannot start: BEARPIT_DATABASE_URL: required when BEARPIT_PRODUCTION is on "
        "(postgres://user:password@host:port/db)"
    ]


def test_in_the_image_the_health_check_reports_a_process_that_is_not_there(platform_image):
    done = run_in(platform_image, "python", "deploy/healthcheck.py", "gateway")
    assert done.returncode == 1
    assert done.stderr.startswith("gateway: unhealthy: no answer:"), done.stderr
