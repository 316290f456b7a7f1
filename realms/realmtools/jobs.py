"""Background jobs: ``run_code(code, background=true)`` answers a job id at once.

The code runs exactly as ``run_code`` runs it (the caller's own sandbox view, its caps,
the Forge's timeout, the output masked and clipped), in a thread of the realmtools
process (``jobs_runner``). ``job_status``, ``job_output`` and ``job_kill`` reach only the
caller's own jobs; at most ``max_per_agent`` run at once per agent. When a job ends the
agent gets a wake with its exit code and last lines. The Chronicle has the ``exec`` and
``exec_result`` of every job, as for ``run_code``, and ``job`` events for its start, kill
and end. A realm's jobs are killed at its teardown (:func:`stop_realm_jobs`).
"""

from __future__ import annotations

import re
import secrets as secrets_mod
import time
from typing import Any

from django.db import transaction
from django.db.models import Max, QuerySet

from chronicle.kinds import Kind
from chronicle.models import now_ms
from chronicle.services import record_event
from realms.forge import procs
from realms.forge.services import sandbox_alive
from realms.forge.spec import ExecResult
from realms.models import Realm
from realms.plan import JobsPlan, RealmPlan, plan_of
from realms.realmtools import jobs_runner
from realms.realmtools.context import Caller, realm_lock
from realms.realmtools.errors import Refusal
from realms.realmtools.mechanics.code import MASK, MAX_CODE
from realms.realmtools.models import Job, Wake
from realms.realmtools.schedules_wakes import add_wake, clip, unmention

LAST_LINES = 5
MAX_TAIL = 200
KILL_WAIT_S = 3.0
TEARDOWN_WAIT_S = 10.0
_ID = re.compile(r"^\s*(?:j|#|job\s*)?(\d{1,6})\s*$", re.IGNORECASE)


def plan_of_jobs(caller: Caller) -> JobsPlan:
    plan = caller.facts.plan.jobs
    if plan is None:
        raise Refusal("this realm does not run background jobs; call run_code without background")
    return plan


def job_number(value: int | str) -> int:
    """A job id as an agent writes it: 3, "3", "J3" or "#3"."""
    if isinstance(value, bool):
        raise Refusal("id must be a job number such as 3")
    if isinstance(value, int):
        number = value
    else:
        match = _ID.match(str(value))
        if match is None:
            raise Refusal(f"id {value!r} is not a job number such as 3")
        number = int(match.group(1))
    if number < 1:
        raise Refusal("job numbers start at 1")
    return number


def commons_gated(plan: RealmPlan) -> bool:
    """Whether only the mentioned agent reads a system post in the Commons: then a wake
    may carry a note or a job's last lines; otherwise it points at the tool instead."""
    return plan.require_mention and not plan.referee_sees_all and not plan.referee_reads_commons


def _jobs(realm_id: str) -> QuerySet[Job]:
    return Job.objects.filter(realm__realm_id=realm_id)


def _mine(caller: Caller, id: int | str) -> Job:
    number = job_number(id)
    job = _jobs(caller.realm_id).filter(number=number, agent_id=caller.agent_id).first()
    if job is None:
        raise Refusal(f"you have no job {number}; job ids come from run_code(background=true)")
    return job


def view(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {"id": job.number, "state": job.state}
    end = job.ended_ms or now_ms()
    out["seconds"] = round((end - job.started_ms) / 1000, 1)
    if job.state != Job.State.RUNNING:
        out["exit_code"] = job.exit_code
        out["output_chars"] = len(job.output)
    return out


def _reap(realm_id: str) -> None:
    jobs_runner.reap_lost(realm_id, lambda job: _wake(realm_id, job))


def start_job(caller: Caller, code: str, *, bearer: str | None = None) -> dict[str, Any]:
    plan = plan_of_jobs(caller)
    if not code.strip():
        raise Refusal("code is empty")
    if len(code) > MAX_CODE:
        raise Refusal(f"code is longer than {MAX_CODE} characters")
    if not sandbox_alive(caller.realm_id, caller.agent_id):
        raise Refusal("your sandbox is not running, so there is nowhere to run code")
    _reap(caller.realm_id)
    realm = Realm.objects.get(realm_id=caller.realm_id)
    exec_id = secrets_mod.token_hex(8)
    shown = code.replace(bearer, MASK) if bearer else code
    # The realm lock counts the caller's running jobs and numbers the new one in one
    # step, so racing calls never run more than the bound between them.
    with realm_lock(caller.realm_id):
        running = _jobs(caller.realm_id).filter(agent_id=caller.agent_id, state=Job.State.RUNNING)
        if running.count() >= plan.max_per_agent:
            raise Refusal(
                f"you already run {plan.max_per_agent} background jobs, this realm's limit; "
                "wait for one to end or job_kill it"
            )
        top = _jobs(caller.realm_id).aggregate(top=Max("number"))["top"] or 0
        job = Job.objects.create(
            realm=realm,
            number=top + 1,
            agent_id=caller.agent_id,
            exec_id=exec_id,
            runner=procs.identity(),
            started_ms=now_ms(),
        )
        record_event(
            caller.realm_id,
            Kind.EXEC,
            {
                "id": exec_id,
                "agent": caller.agent_id,
                "code": shown,
                "background": True,
                "job": job.number,
            },
        )
        record_event(
            caller.realm_id, Kind.JOB, {"op": "start", "job": job.number, "agent": caller.agent_id}
        )
    realm_id = caller.realm_id
    transaction.on_commit(
        lambda: jobs_runner.launch(
            job, realm_id, code, [bearer or ""], lambda j, r, k: finish(realm_id, j, r, k)
        )
    )
    return {
        "job": job.number,
        "state": Job.State.RUNNING,
        "note": "runs in the background; you are woken when it ends. "
        "job_status, job_output and job_kill take this id.",
    }


def finish(realm_id: str, job: Job, result: ExecResult | None, killed: bool) -> None:
    """Record how a job ended (once), and owe its agent a wake."""
    kill_asked = Job.objects.filter(pk=job.pk, kill_requested=True).exists()
    if result is None:
        state, exit_code, output = Job.State.LOST, None, ""
    elif killed and kill_asked:
        state, exit_code, output = Job.State.KILLED, None, result.output
    elif result.timed_out:
        state, exit_code, output = Job.State.TIMED_OUT, None, result.output
    else:
        state, exit_code, output = Job.State.DONE, result.exit_code, result.output
    with transaction.atomic():
        changed = Job.objects.filter(pk=job.pk, state=Job.State.RUNNING).update(
            state=state, exit_code=exit_code, output=output, ended_ms=now_ms()
        )
        if changed != 1:
            return
        record_event(
            realm_id,
            Kind.EXEC_RESULT,
            {
                "id": job.exec_id,
                "agent": job.agent_id,
                "exit_code": exit_code,
                "output": output,
                "job": job.number,
            },
        )
        record_event(
            realm_id,
            Kind.JOB,
            {
                "op": "end",
                "job": job.number,
                "agent": job.agent_id,
                "state": state,
                "exit_code": exit_code,
            },
        )
        # In the same transaction: a job seen ended always has the wake it owes.
        job.refresh_from_db()
        _wake(realm_id, job)


def wake_text(job: Job, *, private: bool) -> str:
    how = {
        Job.State.DONE: f"ended with exit code {job.exit_code}",
        Job.State.TIMED_OUT: "was stopped at the time limit",
        Job.State.KILLED: "was killed",
        Job.State.LOST: "was lost (its runner stopped); its effect is unknown",
    }.get(Job.State(job.state), f"is {job.state}")
    head = f"your background job {job.number} {how}."
    lines = [line for line in job.output.splitlines() if line.strip()]
    if not lines:
        return f"{head} It printed nothing."
    if not private:
        return f"{head} Others can read the Commons: job_output({job.number}) shows its output."
    last = "\n".join(lines[-LAST_LINES:])
    return f"{head} Its last lines:\n{clip(unmention(last))}"


def _wake(realm_id: str, job: Job) -> None:
    realm = Realm.objects.filter(realm_id=realm_id).first()
    if realm is None or realm.state not in (Realm.State.RUNNING,):
        return
    text = wake_text(job, private=commons_gated(plan_of(realm)))
    add_wake(realm_id, job.agent_id, Wake.Source.JOB, job.number, text)


def job_status(caller: Caller, id: int | str | None) -> dict[str, Any]:
    plan = plan_of_jobs(caller)
    _reap(caller.realm_id)
    if id is not None and id != "":
        return {"job": view(_mine(caller, id))}
    rows = _jobs(caller.realm_id).filter(agent_id=caller.agent_id).order_by("-number")[:20]
    return {"jobs": [view(j) for j in rows], "limit": plan.max_per_agent}


def job_output(caller: Caller, id: int | str, tail: int | None) -> dict[str, Any]:
    plan_of_jobs(caller)
    job = _mine(caller, id)
    if job.state == Job.State.RUNNING:
        return {
            "job": view(job),
            "output": "",
            "note": "still running: its output is kept when it ends",
        }
    text = job.output
    if tail is not None:
        if isinstance(tail, bool) or not 1 <= tail <= MAX_TAIL:
            raise Refusal(f"tail: expected a number of lines from 1 to {MAX_TAIL}")
        text = "\n".join(text.splitlines()[-tail:])
    return {"job": view(job), "output": text}


def job_kill(caller: Caller, id: int | str) -> dict[str, Any]:
    plan_of_jobs(caller)
    job = _mine(caller, id)
    with transaction.atomic():
        asked = Job.objects.filter(pk=job.pk, state=Job.State.RUNNING, kill_requested=False).update(
            kill_requested=True
        )
        if asked != 1:
            raise Refusal(f"job {job.number} is not running (it is {job.state})")
        record_event(
            caller.realm_id, Kind.JOB, {"op": "kill", "job": job.number, "agent": caller.agent_id}
        )
    jobs_runner.cancel_local(job.pk)
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.state != Job.State.RUNNING:
            break
        time.sleep(0.1)
    return {"job": view(job)}


def stop_realm_jobs(realm_id: str, wait_s: float = TEARDOWN_WAIT_S) -> int:
    """Kill every running job of a realm (its teardown); how many were running."""
    running = _jobs(realm_id).filter(state=Job.State.RUNNING)
    pks = list(running.values_list("pk", flat=True))
    if not pks:
        return 0
    Job.objects.filter(pk__in=pks).update(kill_requested=True)
    for pk in pks:
        jobs_runner.cancel_local(pk)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and _jobs(realm_id).filter(state=Job.State.RUNNING).exists():
        _reap(realm_id)
        time.sleep(0.1)
    return len(pks)
