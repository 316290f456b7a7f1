"""Docker containers from the agent image (``deploy/agent.Dockerfile``).

Same contract as bwrap: a container per agent, non-root as the agent's host uid, its
home and the shared folder bind-mounted, the sockets directory read-only at
``/run/bearpit``, memory / pids / CPU caps, a read-only root filesystem. Egress
``none`` and ``model_only`` get no network at all (the model is reached through the
gateway socket); ``open`` gets the realm's own bridge network. run_code runs in a
sibling container with the same view and caps, never inside the agent's container,
so it cannot see the runtime's processes or environment.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from threading import Event
from typing import Any

from django.conf import settings

from realms.forge import layout
from realms.forge.backends import SandboxError, host
from realms.forge.command import runtime_args_of
from realms.forge.spec import Egress, ExecResult, SandboxHandle, SandboxSpec, base_env

log = logging.getLogger(__name__)

# Files in the shared folder stay writable by the realm's group (every agent of it).
_UMASK = ["/bin/sh", "-c", 'umask 007; exec "$@"', "sh"]
LABEL_INSTALL = "org.bearpit.install"
LABEL_REALM = "org.bearpit.realm"
LABEL_AGENT = "org.bearpit.agent"
# As the process backends' prlimit (host.rlimit_args). Always explicit: an engine's
# defaults may exceed the hard limits of the engine itself, and then the container
# cannot even start.
NOFILE = 4096


def _client() -> Any:
    import docker

    try:
        if settings.BEARPIT_DOCKER_URL:
            return docker.DockerClient(base_url=settings.BEARPIT_DOCKER_URL)
        return docker.from_env()
    except docker.errors.DockerException as exc:
        raise SandboxError(f"docker engine unreachable: {exc}") from exc


def container_name(spec: SandboxSpec, suffix: str = "") -> str:
    return f"{layout.install_tag()}-{spec.realm_id}-{spec.agent_id}{suffix}"


class DockerBackend:
    name = "docker"
    # One engine call at a time: the client is shared and the engine queues anyway.
    concurrent_starts = 1

    def __init__(self) -> None:
        self._docker: Any = None

    @property
    def client(self) -> Any:
        if self._docker is None:
            self._docker = _client()
        return self._docker

    def prepare(self, spec: SandboxSpec) -> None:
        # The engine applies the caps itself; no host cgroups of ours.
        host.prepare_dirs(spec, cap_disks=True, with_cgroups=False)
        if spec.egress == Egress.OPEN:
            self._network(spec)

    def _network(self, spec: SandboxSpec) -> str:
        name = network_name(spec)
        if not self._networks_named(name):
            self.client.networks.create(
                name,
                driver="bridge",
                labels={LABEL_INSTALL: layout.install_tag(), LABEL_REALM: spec.realm_id},
            )
        return name

    def _networks_named(self, name: str) -> list[Any]:
        # The engine's name filter also matches longer names (realm r1 would find r10's).
        return [n for n in self.client.networks.list(names=[name]) if n.name == name]

    def _run_kwargs(self, spec: SandboxSpec, *, exec_mode: bool) -> dict[str, Any]:
        volumes: dict[str, dict[str, str]] = {
            str(spec.home): {"bind": layout.SANDBOX_HOME, "mode": "rw"},
        }
        if not exec_mode:
            volumes[str(spec.sockets)] = {"bind": layout.SANDBOX_SOCKETS, "mode": "ro"}
        if spec.shared is not None:
            volumes[str(spec.shared)] = {"bind": layout.SANDBOX_SHARED, "mode": "rw"}
        tmpfs = {layout.SANDBOX_TMP: f"size={spec.limits.disk_bytes}"}
        if exec_mode:
            tmpfs[f"{layout.SANDBOX_HOME}/{layout.BIRTH_DIR_NAME}"] = "size=1m"
        kwargs: dict[str, Any] = {
            "user": f"{spec.host_uid}:{spec.host_gid}",
            "volumes": volumes,
            "tmpfs": tmpfs,
            "working_dir": layout.SANDBOX_HOME,
            "read_only": True,
            "mem_limit": spec.limits.memory_bytes,
            "memswap_limit": spec.limits.memory_bytes,
            "pids_limit": spec.limits.max_processes,
            "nano_cpus": int(spec.limits.cpus * 1e9),
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "labels": {
                LABEL_INSTALL: layout.install_tag(),
                LABEL_REALM: spec.realm_id,
                LABEL_AGENT: spec.agent_id,
            },
            # nproc counts per uid, and each agent has a uid of its own.
            "ulimits": [
                _ulimit("nproc", spec.limits.max_processes),
                _ulimit("nofile", NOFILE),
                _ulimit("fsize", spec.limits.disk_bytes),
                _ulimit("core", 0),
            ],
            "detach": True,
        }
        if exec_mode or spec.egress != Egress.OPEN:
            kwargs["network_mode"] = "none"
        else:
            kwargs["network"] = self._network(spec)
        return kwargs

    def start(self, spec: SandboxSpec) -> SandboxHandle:
        import docker

        name = container_name(spec)
        try:
            self._remove_stopped(name)
            container = self.client.containers.run(
                settings.BEARPIT_DOCKER_IMAGE,
                container_argv(spec.argv),
                name=name,
                environment={**spec.full_env(), "PATH": "/opt/venv/bin:/usr/bin:/bin"},
                **self._run_kwargs(spec, exec_mode=False),
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"container for {spec.realm_id}/{spec.agent_id}: {exc}") from exc
        return SandboxHandle(ref=str(container.id))

    def _remove_stopped(self, name: str) -> None:
        """A stopped container left under this name (its stopper died before removing
        it) would make the engine refuse the new one; a live one is left alone."""
        import docker

        try:
            old = self.client.containers.get(name)
        except docker.errors.NotFound:
            return
        if old.status in ("created", "exited", "dead"):
            with contextlib.suppress(docker.errors.NotFound):
                old.remove(force=True)

    def _get(self, handle: SandboxHandle) -> Any:
        import docker

        try:
            return self.client.containers.get(handle.ref)
        except docker.errors.NotFound:
            return None

    def alive(self, spec: SandboxSpec, handle: SandboxHandle) -> bool:
        container = self._get(handle)
        if container is None:
            return False
        container.reload()
        return bool(container.status == "running")

    def stop(self, spec: SandboxSpec, handle: SandboxHandle, grace: float) -> None:
        container = self._get(handle)
        if container is None:
            return
        with contextlib.suppress(Exception):
            container.stop(timeout=max(1, int(grace)))
        self._archive(spec, container)
        with contextlib.suppress(Exception):
            container.remove(force=True)

    def _archive(self, spec: SandboxSpec, container: Any) -> None:
        spec.log_path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            spec.log_path.write_bytes(container.logs(stdout=True, stderr=True))

    def exec(
        self, spec: SandboxSpec, code: str, timeout: float, cancel: Event | None = None
    ) -> ExecResult:
        import docker

        kwargs = self._run_kwargs(spec, exec_mode=True)
        try:
            container = self.client.containers.run(
                settings.BEARPIT_DOCKER_IMAGE,
                [*_UMASK, "python", "-I", "-u", "-c", code],
                environment={**base_env(), "PATH": "/opt/venv/bin:/usr/bin:/bin"},
                **kwargs,
            )
        except docker.errors.DockerException as exc:
            raise SandboxError(f"run_code container for {spec.agent_id}: {exc}") from exc
        timed_out = threading.Event()
        try:
            try:
                result = _wait(container, timeout, cancel)
                exit_code: int | None = int(result.get("StatusCode", -1))
            except Exception:
                timed_out.set()
                exit_code = None
                with contextlib.suppress(Exception):
                    container.kill()
            output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        finally:
            with contextlib.suppress(Exception):
                container.remove(force=True)
        return ExecResult(exit_code=exit_code, output=output, timed_out=timed_out.is_set())

    def logs(self, spec: SandboxSpec, handle: SandboxHandle) -> str:
        container = self._get(handle)
        if container is None:
            return host.read_log(spec.log_path)
        return str(container.logs(stdout=True, stderr=True).decode("utf-8", "replace"))

    def release(self, spec: SandboxSpec) -> None:
        """Also the container of a runtime that exited by itself: its row was marked
        stopped without a stop, so its log is archived here and the container removed.
        An unreachable engine must not keep the disks mounted."""
        import docker

        try:
            try:
                container = self.client.containers.get(container_name(spec))
                self._archive(spec, container)
                container.remove(force=True)
            except docker.errors.NotFound:
                pass
            if spec.egress == Egress.OPEN:
                self.remove_network(network_name(spec))
        except (SandboxError, docker.errors.DockerException, OSError) as exc:
            log.warning("releasing the container of %s/%s: %s", spec.realm_id, spec.agent_id, exc)
        host.release_agent(spec)

    def orphans(self, live: set[tuple[str, str]]) -> list[str]:
        """Containers of this installation whose (realm, agent) is not live."""
        found = self.client.containers.list(
            all=True, filters={"label": f"{LABEL_INSTALL}={layout.install_tag()}"}
        )
        names: list[str] = []
        for container in found:
            labels = container.labels or {}
            key = (labels.get(LABEL_REALM, ""), labels.get(LABEL_AGENT, ""))
            if key not in live:
                names.append(str(container.name))
        return names

    def orphan_networks(self, busy_realms: set[str]) -> list[str]:
        """Realm networks of this installation whose realm has no live sandbox (their
        last container went without a release, e.g. with a crashed worker)."""
        found = self.client.networks.list(
            filters={"label": f"{LABEL_INSTALL}={layout.install_tag()}"}
        )
        return sorted(
            str(n.name)
            for n in found
            if (n.attrs.get("Labels") or {}).get(LABEL_REALM, "") not in busy_realms
        )

    def remove_network(self, name: str) -> None:
        """A realm's network goes with its last container; while a container still uses
        it, the engine refuses and it stays."""
        import docker

        for network in self._networks_named(name):
            with contextlib.suppress(docker.errors.APIError):
                network.remove()

    def remove_container(self, name: str) -> None:
        with contextlib.suppress(Exception):
            self.client.containers.get(name).remove(force=True)


def network_name(spec: SandboxSpec) -> str:
    return f"{layout.install_tag()}-{spec.realm_id}"


def container_argv(argv: Sequence[str]) -> list[str]:
    """The container's command for a sandbox's ``argv``. The runtime comes from the
    image (``/opt/bearpit`` is on its Python's path), so the host's bootstrap form becomes
    ``python -I -m runtime <its arguments>`` (isolated: ``-m`` would put the agent's
    writable working directory first on the path); any other command runs with the
    image's python and the rest of ``argv`` (the first item names a host interpreter)."""
    runtime_args = runtime_args_of(argv)
    rest = (
        ["-I", "-B", "-u", "-m", "runtime", *runtime_args]
        if runtime_args is not None
        else list(argv[1:])
    )
    return [*_UMASK, "python", *rest]


def _ulimit(name: str, value: int) -> Any:
    import docker

    return docker.types.Ulimit(name=name, soft=value, hard=value)


def _wait(container: Any, timeout: float, cancel: Event | None) -> Any:
    """``container.wait`` that also gives up once ``cancel`` is set (raising, as a
    timeout does)."""
    if cancel is None:
        return container.wait(timeout=timeout)
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if cancel.is_set() or left <= 0:
            raise TimeoutError("run_code cancelled or out of time")
        try:
            return container.wait(timeout=max(1, min(1.0, left)))
        except Exception:
            if time.monotonic() >= deadline or cancel.is_set():
                raise
