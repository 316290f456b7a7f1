"""Where background jobs run: one thread per job in the realmtools process, and a watcher.

A job is ``run_code`` in a thread: the same Forge call, the same sandbox view, caps,
timeout and output clipping, with a cancel event the Forge checks while it waits. The
watcher thread sets that event when the job's row asks for a kill (``job_kill``, or the
realm's teardown from another process) or the realm is no longer live. When the run ends
the row gets its state and output, the Chronicle its ``exec_result`` and ``job end``, and
the agent a wake.

A job whose process died with the realmtools server (a restart) cannot be finished by
anyone: rows whose runner is gone are marked ``lost`` (:func:`reap_lost`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from django.db import close_old_connections, transaction

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.services import record_event
from realms.forge import procs
from realms.forge.runcode import RunCodeError
from realms.forge.runcode import run_code as forge_run_code
from realms.forge.spec import ExecResult
from realms.realmtools.facts import LIVE_STATES
from realms.realmtools.models import Job

log = logging.getLogger(__name__)

WATCH_EVERY_S = 0.5
# What this process runs: job row id → its cancel event.
_LOCAL: dict[int, threading.Event] = {}
_LOCK = threading.Lock()
_watcher: threading.Thread | None = None

Finished = Callable[[Job, ExecResult | None, bool], None]
"""``finished(job, result, killed)``: record the end of a job (``result`` None: it never ran)."""


def cancel_local(job_pk: int) -> bool:
    """Set a job's cancel event if this process runs it."""
    with _LOCK:
        event = _LOCAL.get(job_pk)
    if event is not None:
        event.set()
    return event is not None


def launch(job: Job, realm_id: str, code: str, secrets: list[str], finished: Finished) -> None:
    """Start ``job`` in a thread of this process."""
    event = threading.Event()
    with _LOCK:
        _LOCAL[job.pk] = event
    thread = threading.Thread(
        target=_run,
        args=(job, realm_id, code, secrets, event, finished),
        name=f"job-{job.realm_id}-{job.number}",
        daemon=True,
    )
    thread.start()
    _ensure_watcher()


def _run(
    job: Job,
    realm_id: str,
    code: str,
    secrets: list[str],
    event: threading.Event,
    finished: Finished,
) -> None:
    close_old_connections()
    result: ExecResult | None = None
    try:
        result = forge_run_code(realm_id, job.agent_id, code, secrets=secrets, cancel=event)
    except RunCodeError as exc:
        log.info("job %s could not run: %s", job.pk, exc)
    except Exception:
        log.exception("job %s failed", job.pk)
    finally:
        with _LOCK:
            _LOCAL.pop(job.pk, None)
    try:
        finished(job, result, event.is_set())
    except Exception:
        log.exception("recording the end of job %s failed", job.pk)
    finally:
        close_old_connections()


def _ensure_watcher() -> None:
    global _watcher
    with _LOCK:
        if _watcher is not None and _watcher.is_alive():
            return
        _watcher = threading.Thread(target=_watch, name="job-watcher", daemon=True)
        _watcher.start()


def _watch() -> None:
    """Cancel local jobs whose row asks for it or whose realm is over; exit when idle."""
    global _watcher
    try:
        while True:
            time.sleep(WATCH_EVERY_S)
            with _LOCK:
                running = dict(_LOCAL)
                if not running:
                    _watcher = None
                    return
            close_old_connections()
            try:
                rows = Job.objects.filter(pk__in=list(running)).values_list(
                    "pk", "kill_requested", "realm__state"
                )
                for pk, kill, state in rows:
                    if kill or state not in LIVE_STATES:
                        running[pk].set()
            except Exception:
                log.exception("the job watcher could not read the jobs")
    finally:
        close_old_connections()


def reap_lost(realm_id: str, on_lost: Callable[[Job], None]) -> int:
    """Mark ``lost`` every running job of the realm whose runner process is gone."""
    lost = 0
    for job in Job.objects.filter(realm__realm_id=realm_id, state=Job.State.RUNNING):
        with _LOCK:
            local = job.pk in _LOCAL
        if local or procs.identity_alive(job.runner) is not False:
            continue
        with transaction.atomic():
            changed = Job.objects.filter(pk=job.pk, state=Job.State.RUNNING).update(
                state=Job.State.LOST, ended_ms=now_ms()
            )
            if changed == 1:
                record_event(
                    realm_id,
                    Kind.JOB,
                    {"op": "end", "job": job.number, "agent": job.agent_id, "state": "lost"},
                )
                lost += 1
        if changed == 1:
            job.refresh_from_db()
            on_lost(job)
    return lost
