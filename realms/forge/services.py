"""Forge services: start, stop, re-attach and release agent sandboxes.

Sandboxes are external side effects, so rows are written in small transactions around
them: a row is claimed (conditional UPDATE) before a sandbox is touched, which makes a
repeated stop harmless and lets two workers never stop the same sandbox twice.

Teardown order for a concluding realm: ``stop_realm_sandboxes`` → ``capture_outputs``
→ ``release_realm`` (which unmounts the capped homes and shared folder and deletes
them with their disk images).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from realms.forge import layout, procs, quota, uids
from realms.forge.backends import SandboxBackend, SandboxError, get_backend
from realms.forge.command import runtime_argv
from realms.forge.models import Sandbox
from realms.forge.spec import Egress, Limits, SandboxHandle, SandboxSpec

log = logging.getLogger(__name__)


class ForgeError(RuntimeError):
    """Provisioning failed; the message names the agent and the reason."""

    def __init__(self, message: str, agent_id: str | None = None) -> None:
        super().__init__(message)
        self.agent_id = agent_id


@dataclass(frozen=True)
class AgentSandboxRequest:
    """One agent to start: its birth config (JSON text, secrets inside) and the
    resource files placed in ``home/resources/`` (relative path → content).

    ``birth_config=None`` starts a runtime that waits for its config (``argv`` must ask
    for that); :func:`deliver_birth` hands it over once the bus and keys exist."""

    agent_id: str
    birth_config: str | None
    resources: Mapping[str, bytes | str] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    argv: Sequence[str] | None = None


def spec_for(row: Sandbox, argv: Sequence[str] | None = None) -> SandboxSpec:
    return SandboxSpec(
        realm_id=row.realm_id,
        agent_id=row.agent_id,
        host_uid=row.host_uid,
        host_gid=row.host_gid,
        home=layout.home_dir(row.realm_id, row.agent_id),
        shared=layout.shared_dir(row.realm_id) if row.shared else None,
        sockets=layout.sockets_dir(),
        log_path=layout.log_path(row.realm_id, row.agent_id),
        limits=Limits(**row.limits) if row.limits else Limits.from_settings(),
        egress=Egress(row.egress),
        argv=tuple(argv if argv is not None else runtime_argv()),
    )


def handle_for(row: Sandbox) -> SandboxHandle:
    return SandboxHandle(pid=row.pid, start_time=row.pid_start_time, ref=row.ref)


def _check_requests(realm_id: str, requests: Sequence[AgentSandboxRequest]) -> None:
    layout.check_realm_id(realm_id)
    if not requests:
        raise ForgeError(f"realm {realm_id}: no agents to start")
    seen: set[str] = set()
    for req in requests:
        try:
            layout.check_id("agent id", req.agent_id)
        except layout.LayoutError as exc:
            raise ForgeError(str(exc), req.agent_id) from None
        if req.agent_id in seen:
            raise ForgeError(f"agent {req.agent_id}: listed twice", req.agent_id)
        seen.add(req.agent_id)
        if req.birth_config is not None:
            _check_birth(req.agent_id, req.birth_config)
        for name in req.resources:
            path = PurePosixPath(name)
            if path.is_absolute() or ".." in path.parts or not path.parts:
                raise ForgeError(
                    f"agent {req.agent_id}: resource {name!r}: expected a relative path "
                    "inside resources/",
                    req.agent_id,
                )


def _check_birth(agent_id: str, birth_config: str) -> None:
    try:
        json.loads(birth_config)
    except ValueError as exc:
        raise ForgeError(f"agent {agent_id}: birth config is not JSON: {exc}", agent_id) from None


def _allocate_rows(
    realm_id: str,
    requests: Sequence[AgentSandboxRequest],
    backend: str,
    *,
    shared: bool,
    egress: Egress,
    limits: Limits,
) -> list[Sandbox]:
    """Insert one row per agent with a free host uid; the realm's gid is its first uid.

    Free means: no live row of this installation has it, and its host-wide lease is
    ours (realms/forge/uids.py), so no other installation on this host runs an agent
    as it and no process owns it. The leases stay with this process until
    :func:`start_agent_sandboxes` has handed each to its sandbox."""
    base, count = settings.BEARPIT_SANDBOX_UID_BASE, settings.BEARPIT_SANDBOX_UID_COUNT
    for _attempt in range(5):
        leased: list[int] = []
        try:
            with transaction.atomic():
                used = set(
                    Sandbox.objects.filter(state__in=Sandbox.LIVE_STATES).values_list(
                        "host_uid", flat=True
                    )
                )
                free = (
                    uid
                    for uid in range(base, base + count)
                    if uid not in used and uids.try_lease(uid)
                )
                rows: list[Sandbox] = []
                gid: int | None = None
                for req in requests:
                    uid = next(free, None)
                    if uid is None:
                        raise ForgeError(f"no free sandbox uid in {base}..{base + count - 1}")
                    leased.append(uid)
                    gid = uid if gid is None else gid
                    rows.append(
                        Sandbox.objects.create(
                            realm_id=realm_id,
                            agent_id=req.agent_id,
                            backend=backend,
                            host_uid=uid,
                            host_gid=gid,
                            shared=shared,
                            egress=egress.value,
                            limits=asdict(limits),
                        )
                    )
                return rows
        except IntegrityError:
            _drop_leases(leased)
            if Sandbox.objects.filter(
                realm_id=realm_id,
                agent_id__in=[r.agent_id for r in requests],
                state__in=Sandbox.LIVE_STATES,
            ).exists():
                raise ForgeError(f"realm {realm_id}: an agent already has a live sandbox") from None
            continue  # another realm took one of the uids at the same moment: try again
        except BaseException:
            _drop_leases(leased)
            raise
    raise ForgeError("could not allocate sandbox uids; too much contention")


def _drop_leases(leased: Sequence[int]) -> None:
    for uid in leased:
        uids.drop(uid)


def _birth_dir(spec: SandboxSpec) -> Path:
    birth_dir = spec.home / layout.BIRTH_DIR_NAME
    if birth_dir.is_symlink():
        raise ForgeError(f"agent {spec.agent_id}: {birth_dir} is a symlink", spec.agent_id)
    birth_dir.mkdir(mode=0o700, exist_ok=True)
    return birth_dir


def _write_birth(spec: SandboxSpec, birth_config: str) -> None:
    """Write the birth config (0600, the agent's) under a temporary name and rename it
    into place: a runtime waiting for it never reads half a file."""
    birth_dir = _birth_dir(spec)
    final = birth_dir / layout.BIRTH_FILE_NAME
    part = birth_dir / f".{layout.BIRTH_FILE_NAME}.part"
    part.unlink(missing_ok=True)
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(birth_config)
    if os.geteuid() == 0:
        os.chown(part, spec.host_uid, spec.host_gid, follow_symlinks=False)
    os.replace(part, final)


def _write_home(spec: SandboxSpec, req: AgentSandboxRequest) -> None:
    """Birth config (0600, owned by the agent) and resources, inside the capped home."""
    uid, gid = spec.host_uid, spec.host_gid
    as_root = os.geteuid() == 0
    birth_dir = _birth_dir(spec)
    birth = birth_dir / layout.BIRTH_FILE_NAME
    if req.birth_config is None:
        birth.unlink(missing_ok=True)  # a waiting runtime must not take a stale one
    else:
        _write_birth(spec, req.birth_config)
    resources = spec.home / "resources"
    resources.mkdir(exist_ok=True)
    written = [birth_dir, resources]
    for name, content in req.resources.items():
        target = resources / name
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode("utf-8") if isinstance(content, str) else content
        target.write_bytes(data)
        written.append(target)
        parent = target.parent
        while parent != resources:
            written.append(parent)
            parent = parent.parent
    if as_root:
        os.chown(spec.home, uid, gid)
        for path in written:
            os.chown(path, uid, gid, follow_symlinks=False)


def start_agent_sandboxes(
    realm_id: str,
    requests: Sequence[AgentSandboxRequest],
    *,
    shared_folder: bool = False,
    egress: Egress | str = Egress.MODEL_ONLY,
    limits: Limits | None = None,
    backend: str | None = None,
    on_started: Callable[[Sandbox], None] | None = None,
) -> list[Sandbox]:
    """Start one sandbox per request with the runtime inside. If any agent fails, every
    sandbox started here is torn down and ForgeError names the agent and the reason."""
    _check_requests(realm_id, requests)
    try:
        egress = Egress(egress)
    except ValueError:
        raise ForgeError(
            f"network_egress {egress!r}: expected one of none, model_only, open"
        ) from None
    chosen = backend or settings.BEARPIT_SANDBOX
    impl = get_backend(chosen)
    caps = limits or Limits.from_settings()
    rows = _allocate_rows(
        realm_id, requests, chosen, shared=shared_folder, egress=egress, limits=caps
    )
    try:
        return _start_rows(impl, rows, requests, on_started)
    finally:
        # Each started sandbox holds its own lease now; failed ones need none.
        _drop_leases([row.host_uid for row in rows])


def _launch(impl: SandboxBackend, spec: SandboxSpec, req: AgentSandboxRequest) -> SandboxHandle:
    """The part of a start that touches only the host, never the database."""
    impl.prepare(spec)
    _write_home(spec, req)
    return impl.start(spec)


# The niceness of a runtime waiting for its birth config (see SandboxSpec.start_niceness).
WAITING_NICENESS = 19
_START_ERRORS = (SandboxError, quota.QuotaError, OSError, ForgeError)


def _start_rows(
    impl: SandboxBackend,
    rows: list[Sandbox],
    requests: Sequence[AgentSandboxRequest],
    on_started: Callable[[Sandbox], None] | None = None,
) -> list[Sandbox]:
    """Start every row's sandbox, a few at a time where the backend allows it: a start
    mostly waits (mkfs, mount, bwrap setting up), so fifty agents need not queue.

    The first one starts alone: it makes what the realm's sandboxes share (the shared
    folder's mount), which concurrent starts would race to make. After a failure no new
    start begins; whatever did start is stopped again and ForgeError names the agent.
    ``on_started`` is called, in this thread, with each row once it is started, in order;
    it must not raise (the caller keeps its own failure for later)."""
    specs = [
        replace(
            spec_for(row, req.argv),
            env=dict(req.env),
            start_niceness=WAITING_NICENESS if req.birth_config is None else 0,
        )
        for row, req in zip(rows, requests, strict=True)
    ]
    failed = threading.Event()

    def launch(index: int) -> SandboxHandle | None:
        if failed.is_set():
            return None
        try:
            return _launch(impl, specs[index], requests[index])
        except BaseException:
            failed.set()
            raise

    futures: list[Future[SandboxHandle | None]] = []
    started: list[Sandbox] = []
    problem: tuple[Sandbox, AgentSandboxRequest, BaseException] | None = None
    with ThreadPoolExecutor(max(1, min(impl.concurrent_starts, len(rows)))) as pool:
        futures.append(pool.submit(launch, 0))
        futures[0].exception()  # wait: the first start prepares what is shared
        futures += [pool.submit(launch, index) for index in range(1, len(rows))]
        # Each sandbox is promoted as soon as it (and every one before it) runs, so the
        # caller may hand it its birth config while the later ones still start.
        for row, req, spec, future in zip(rows, requests, specs, futures, strict=True):
            exc = future.exception()
            if exc is not None:
                problem = problem or (row, req, exc)
                continue
            handle = future.result()
            if handle is None:
                continue  # not begun: an earlier start had failed
            _promote(impl, row, spec, handle)
            started.append(row)
            if problem is None and on_started is not None:
                on_started(row)
    if problem is not None:
        row, req, exc = problem
        Sandbox.objects.filter(pk=row.pk).update(
            state=Sandbox.State.FAILED, error=str(exc), stopped_at=timezone.now()
        )
        _undo(impl, started, rows, reason=f"agent {req.agent_id} failed to start")
        if not isinstance(exc, _START_ERRORS):
            raise exc
        raise ForgeError(f"agent {req.agent_id}: {exc}", req.agent_id) from exc
    return started


def _promote(impl: SandboxBackend, row: Sandbox, spec: SandboxSpec, handle: SandboxHandle) -> None:
    uids.drop(row.host_uid)
    promoted = Sandbox.objects.filter(pk=row.pk, state=Sandbox.State.STARTING).update(
        pid=handle.pid,
        pid_start_time=handle.start_time,
        ref=handle.ref,
        state=Sandbox.State.RUNNING,
        started_at=timezone.now(),
    )
    if not promoted:
        # Stopped (elimination, kill switch) while it was starting: honour that.
        impl.stop(spec, handle, 0)
        Sandbox.objects.filter(pk=row.pk).update(
            pid=handle.pid, pid_start_time=handle.start_time, ref=handle.ref
        )
    row.refresh_from_db()


def deliver_birth(realm_id: str, agent_id: str, birth_config: str) -> None:
    """Hand a waiting runtime (started with ``birth_config=None``) its birth config."""
    _check_birth(agent_id, birth_config)
    row = Sandbox.objects.filter(
        realm_id=realm_id, agent_id=agent_id, state=Sandbox.State.RUNNING
    ).first()
    if row is None:
        raise ForgeError(f"agent {agent_id}: no running sandbox to hand a birth config", agent_id)
    if row.pid:
        # Started low while it waited (WAITING_NICENESS); from now on it is an agent.
        procs.set_tree_niceness(row.pid, row.pid_start_time, 0)
    _write_birth(spec_for(row), birth_config)


def _undo(
    impl: SandboxBackend, started: list[Sandbox], rows: list[Sandbox], *, reason: str
) -> None:
    for row in started:
        stop_agent_sandbox(row.realm_id, row.agent_id, reason)
    Sandbox.objects.filter(pk__in=[r.pk for r in rows], state=Sandbox.State.STARTING).update(
        state=Sandbox.State.FAILED, error=reason, stopped_at=timezone.now()
    )
    for row in rows:
        try:
            _remove_birth(spec_for(row))
            impl.release(spec_for(row))
        except Exception:
            log.exception("releasing %s after a failed start", row)
    if rows and rows[0].shared:
        quota.unmount(layout.shared_dir(rows[0].realm_id))


def _remove_birth(spec: SandboxSpec) -> None:
    """Delete the birth config (its tokens are revoked, but tokens all the same) before
    the home is unmounted, in case its image outlives the teardown. ``.bearpit`` is the
    agent's to replace, so it is opened without following a symlink and the file
    removed relative to it."""
    try:
        fd = os.open(
            spec.home / layout.BIRTH_DIR_NAME, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
        )
    except OSError:
        return
    try:
        for name in (layout.BIRTH_FILE_NAME, f".{layout.BIRTH_FILE_NAME}.part"):
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def stop_agent_sandbox(realm_id: str, agent_id: str, reason: str) -> bool:
    """Stop an agent's sandbox; True if this call stopped it, False if it was not live.

    Elimination and budget kills may race or repeat: the conditional UPDATE lets
    exactly one caller do the stop.
    """
    claimed = Sandbox.objects.filter(
        realm_id=realm_id,
        agent_id=agent_id,
        state__in=(Sandbox.State.STARTING, Sandbox.State.RUNNING),
    ).update(state=Sandbox.State.STOPPING, stop_reason=reason[:200])
    if not claimed:
        return False
    row = Sandbox.objects.get(realm_id=realm_id, agent_id=agent_id, state=Sandbox.State.STOPPING)
    finish_stop(row)
    return True


def finish_stop(row: Sandbox) -> None:
    """Stop a claimed (``stopping``) row's sandbox and mark it stopped."""
    impl = get_backend(row.backend)
    error = ""
    try:
        impl.stop(spec_for(row), handle_for(row), settings.BEARPIT_SANDBOX_STOP_GRACE)
    except SandboxError as exc:
        error = str(exc)
        log.warning("stopping %s: %s", row, exc)
    Sandbox.objects.filter(pk=row.pk).update(
        state=Sandbox.State.STOPPED, stopped_at=timezone.now(), error=error
    )


def stop_realm_sandboxes(realm_id: str, reason: str = "teardown") -> list[Sandbox]:
    """Stop every live sandbox of the realm; each log stays archived at
    ``realms/<realm>/logs/<agent>.log``. Returns the realm's rows."""
    for row in Sandbox.objects.filter(realm_id=realm_id, state__in=Sandbox.LIVE_STATES):
        if row.state == Sandbox.State.STOPPING:
            finish_stop(row)  # a stopper died half-way: finish its job
        else:
            stop_agent_sandbox(realm_id, row.agent_id, reason)
    return list(Sandbox.objects.filter(realm_id=realm_id).order_by("agent_id", "-created_at"))


def release_realm(realm_id: str) -> None:
    """Unmount and delete the realm's homes and shared folder, with their disk images,
    and drop its cgroups. Call after outputs are captured and traces ingested: the
    logs, ``outputs/`` and the Chronicle are what the archive reads, never the disks.
    Live sandboxes are stopped first."""
    stop_realm_sandboxes(realm_id, "released")
    latest: dict[str, Sandbox] = {}
    for row in Sandbox.objects.filter(realm_id=realm_id).order_by("created_at"):
        latest[row.agent_id] = row
    problems: list[str] = []
    for row in latest.values():
        spec = spec_for(row)
        _remove_birth(spec)
        get_backend(row.backend).release(spec)
        try:
            _discard_agent_disk(realm_id, row.agent_id)
        except (OSError, quota.QuotaError) as exc:
            problems.append(f"agent {row.agent_id}: {exc}")
    try:
        quota.discard(layout.shared_image(realm_id), layout.shared_dir(realm_id))
    except (OSError, quota.QuotaError) as exc:
        problems.append(f"shared folder: {exc}")
    agents = layout.realm_dir(realm_id) / "agents"
    with contextlib.suppress(OSError):
        agents.rmdir()  # only once every agent's folder is gone
    if problems:
        # No marker: a repeated teardown tries the deletion again.
        raise ForgeError(f"realm {realm_id}: disks not deleted: " + "; ".join(problems))
    if layout.realm_dir(realm_id).is_dir():
        released_marker(realm_id).touch()


def _discard_agent_disk(realm_id: str, agent_id: str) -> None:
    """The home and its image, then the agent's folder (its generated /etc files)."""
    quota.discard(layout.home_image(realm_id, agent_id), layout.home_dir(realm_id, agent_id))
    folder = layout.agent_dir(realm_id, agent_id)
    if folder.is_dir() and not folder.is_symlink():
        shutil.rmtree(folder)


def released_marker(realm_id: str) -> Path:
    """Present once the realm's sandboxes are torn down and its disks released."""
    return layout.realm_dir(realm_id) / ".released"


def reattach(realm_id: str) -> list[Sandbox]:
    """After a worker restart: keep the sandboxes still alive, mark the rest stopped.
    Returns the live ones."""
    live: list[Sandbox] = []
    for row in Sandbox.objects.filter(realm_id=realm_id, state__in=Sandbox.LIVE_STATES):
        impl = get_backend(row.backend)
        if row.state == Sandbox.State.STOPPING:
            finish_stop(row)
        elif impl.alive(spec_for(row), handle_for(row)):
            if row.state != Sandbox.State.RUNNING:
                Sandbox.objects.filter(pk=row.pk).update(state=Sandbox.State.RUNNING)
                row.refresh_from_db()
            live.append(row)
        else:
            Sandbox.objects.filter(pk=row.pk, state=row.state).update(
                state=Sandbox.State.STOPPED,
                stopped_at=timezone.now(),
                stop_reason="gone after a worker restart",
            )
    return live


def sandbox_alive(realm_id: str, agent_id: str) -> bool:
    row = live_sandbox(realm_id, agent_id)
    return row is not None and get_backend(row.backend).alive(spec_for(row), handle_for(row))


def live_sandbox(realm_id: str, agent_id: str) -> Sandbox | None:
    return Sandbox.objects.filter(
        realm_id=realm_id, agent_id=agent_id, state=Sandbox.State.RUNNING
    ).first()
