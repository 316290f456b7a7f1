"""Whether each sandbox backend could start a sandbox here, checked without starting one.

The settings page shows this, so every check is cheap: a lookup on ``PATH``, the
effective uid, one ping of the container engine with a short timeout. ``pit_up``'s
preflight goes further (it runs bubblewrap once) before it creates anything.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from django.conf import settings

BACKENDS = ("bwrap", "docker", "process")
# The engine answers a ping in milliseconds; one that takes longer is as good as absent.
ENGINE_TIMEOUT_S = 2


@dataclass(frozen=True)
class Readiness:
    name: str
    ready: bool
    reason: str | None = None


def _bwrap() -> Readiness:
    if shutil.which("bwrap") is None:
        return Readiness("bwrap", False, "bwrap not found: apt-get install bubblewrap")
    if os.geteuid() != 0:
        return Readiness(
            "bwrap", False, "bwrap runs each agent as its own host uid, which needs root"
        )
    return Readiness("bwrap", True)


def _docker() -> Readiness:
    try:
        import docker
    except ImportError:  # pragma: no cover - a dependency of the project
        return Readiness("docker", False, "the docker Python package is not installed")
    image = settings.BEARPIT_DOCKER_IMAGE
    try:
        if settings.BEARPIT_DOCKER_URL:
            client = docker.DockerClient(
                base_url=settings.BEARPIT_DOCKER_URL, timeout=ENGINE_TIMEOUT_S
            )
        else:
            client = docker.from_env(timeout=ENGINE_TIMEOUT_S)
    except docker.errors.DockerException as exc:
        return Readiness("docker", False, f"docker engine unreachable: {exc}")
    try:
        client.ping()
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return Readiness(
            "docker", False, f"agent image {image} not built (deploy/agent.Dockerfile)"
        )
    except Exception as exc:  # the SDK raises requests' errors as well as its own
        return Readiness("docker", False, f"docker engine unreachable: {exc}")
    finally:
        client.close()
    return Readiness("docker", True)


def _process() -> Readiness:
    # Always startable; it isolates nothing, which the settings page says beside it.
    return Readiness("process", True)


def backend_readiness() -> list[Readiness]:
    """Every backend, in BACKENDS order."""
    return [_bwrap(), _docker(), _process()]


def selected_backend() -> str:
    return str(settings.BEARPIT_SANDBOX)
