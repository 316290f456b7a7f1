"""Background jobs through realmtools, run in the caller's real bwrap sandbox."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.forge import layout
from realms.forge.services import release_realm, stop_realm_sandboxes
from realms.realmtools.jobs import stop_realm_jobs
from realms.realmtools.models import Job, Wake
from tests.realms.forge.conftest import UID_BASE, script_request, start

from .conftest import PLAYERS

pytestmark = pytest.mark.timeout(120)

SLEEPER = "import time; time.sleep(300)"
JOBS = {"mechanics": [{"kind": "background-jobs", "max_per_agent": 1}]}


@pytest.fixture
def sandboxed(realms, settings):
    settings.BEARPIT_SANDBOX = "bwrap"
    settings.BEARPIT_SANDBOX_UID_BASE = UID_BASE
    settings.BEARPIT_SANDBOX_UID_COUNT = 500
    layout.sockets_dir().mkdir(parents=True, exist_ok=True)
    # Players only: with no referee reading the whole Commons, a wake carries the last lines.
    realm = realms(spec=JOBS, agents=PLAYERS)
    start(realm.realm_id, [script_request("orin", SLEEPER), script_request("vela", SLEEPER)])
    yield realm
    stop_realm_jobs(realm.realm_id)
    stop_realm_sandboxes(realm.realm_id, "test over")
    release_realm(realm.realm_id)


def _ended(realm, number: int, timeout: float = 30.0) -> Job:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = Job.objects.get(realm=realm, number=number)
        if job.state != Job.State.RUNNING:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {number} still running after {timeout}s")


def _events(realm, kind):
    return [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=kind)]


def test_a_background_job_answers_at_once_and_its_end_owes_a_wake(realms, sandboxed) -> None:
    orin = realms.agent(sandboxed, "orin")
    assert {"job_status", "job_output", "job_kill"} <= orin.tools()
    began = time.monotonic()
    code = "import time\nfor i in range(7): print('line', i)\ntime.sleep(2)\nprint('done')"
    started = orin.call("run_code", code=code, background=True)
    assert time.monotonic() - began < 2  # answered before the job's two seconds of sleep
    assert started["job"] == 1 and started["state"] == "running"
    assert orin.call("job_status", id=1)["job"]["state"] == "running"
    job = _ended(sandboxed, 1)
    assert (job.state, job.exit_code) == ("done", 0)
    assert orin.call("job_output", id="J1", tail=2) == {
        "job": {**orin.call("job_status", id=1)["job"]},
        "output": "line 6\ndone",
    }
    full = orin.call("job_output", id=1)["output"]
    assert full.startswith("line 0\n") and full.endswith("done\n")
    # Recorded as run_code is, plus the job's own start and end.
    (exec_,) = _events(sandboxed, Kind.EXEC)
    (result,) = _events(sandboxed, Kind.EXEC_RESULT)
    assert exec_["background"] is True and exec_["job"] == 1
    assert result["id"] == exec_["id"] and result["output"] == full and result["exit_code"] == 0
    assert [(p["op"], p["job"]) for p in _events(sandboxed, Kind.JOB)] == [
        ("start", 1),
        ("end", 1),
    ]
    (wake,) = Wake.objects.filter(realm=sandboxed)
    assert (wake.agent_id, wake.source, wake.ref, wake.state) == ("orin", "job", 1, "pending")
    assert wake.text.startswith("your background job 1 ended with exit code 0.")
    assert wake.text.endswith("line 3\nline 4\nline 5\nline 6\ndone")


def test_job_kill_kills_and_the_bound_and_ownership_hold(realms, sandboxed, settings) -> None:
    orin, vela = realms.agent(sandboxed, "orin"), realms.agent(sandboxed, "vela")
    marker = layout.home_dir(sandboxed.realm_id, "orin") / "after-sleep"
    code = f"import time; time.sleep(8); open({str(layout.SANDBOX_HOME)!r} + '/after-sleep', 'w')"
    assert orin.call("run_code", code=code, background=True)["job"] == 1
    # One job at a time per agent here: the second is refused, and never starts.
    assert "this realm's limit" in orin.call("run_code", code="print(1)", background=True)["error"]
    # Another agent can neither read nor kill it, by any spelling of its id.
    for verb, args in (("job_status", {"id": 1}), ("job_output", {"id": "1"}), ("job_kill", {})):
        answer = vela.call(verb, **({"id": "#1"} | args))
        assert answer == {"error": "you have no job 1; job ids come from run_code(background=true)"}
    assert vela.call("job_status") == {"jobs": [], "limit": 1}
    began = time.monotonic()
    killed = orin.call("job_kill", id=1)
    assert killed["job"]["state"] == "killed" and time.monotonic() - began < 3
    assert "not running" in orin.call("job_kill", id=1)["error"]
    time.sleep(9)
    assert not marker.exists()  # the process died with the kill
    ops = [(p["op"], p.get("state")) for p in _events(sandboxed, Kind.JOB)]
    assert ops == [("start", None), ("kill", None), ("end", "killed")]
    # The slot is free again.
    assert orin.call("run_code", code="print(2)", background=True)["job"] == 2
    assert _ended(sandboxed, 2).output == "2\n"


def test_a_job_has_run_codes_time_limit(realms, sandboxed, settings) -> None:
    settings.BEARPIT_SANDBOX_EXEC_TIMEOUT = 2
    orin = realms.agent(sandboxed, "orin")
    orin.call(
        "run_code", code="print('start', flush=True); import time; time.sleep(60)", background=True
    )
    job = _ended(sandboxed, 1, timeout=10)
    assert (job.state, job.exit_code) == ("timed_out", None)
    (wake,) = Wake.objects.filter(realm=sandboxed)
    assert "was stopped at the time limit" in wake.text


def test_the_teardown_kills_a_realms_jobs(realms, sandboxed) -> None:
    orin = realms.agent(sandboxed, "orin")
    orin.call("run_code", code="import time; time.sleep(120)", background=True)
    began = time.monotonic()
    assert stop_realm_jobs(sandboxed.realm_id) == 1
    assert Job.objects.get(realm=sandboxed, number=1).state == "killed"
    assert time.monotonic() - began < 5


def test_without_the_mechanic_there_are_no_background_jobs(realms) -> None:
    realm = realms()
    orin = realms.agent(realm, "orin")
    assert "job_status" not in orin.tools()
    answer = orin.call("run_code", code="print(1)", background=True)
    assert answer == {
        "error": "this realm does not run background jobs; call run_code without background"
    }
    assert not Job.objects.filter(realm=realm).exists()


def test_racing_calls_never_run_more_jobs_than_the_bound(realms, sandboxed) -> None:
    orin = realms.agent(sandboxed, "orin")
    code = "import time; time.sleep(20)"
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(
            pool.map(lambda _: orin.call("run_code", code=code, background=True), range(4))
        )
    started = [a for a in answers if "job" in a]
    assert len(started) == 1
    assert all("this realm's limit" in a["error"] for a in answers if "job" not in a)
    assert Job.objects.filter(realm=sandboxed).count() == 1


def test_a_job_whose_runner_died_is_lost_and_frees_its_slot(realms) -> None:
    realm = realms(spec=JOBS, agents=PLAYERS)
    # What a realmtools process that died mid-job leaves: a running row nobody runs.
    Job.objects.create(
        realm=realm,
        number=1,
        agent_id="orin",
        exec_id="0" * 16,
        runner=f"{socket.gethostname()}:999999999:1",
        started_ms=1,
    )
    orin = realms.agent(realm, "orin")
    assert orin.call("job_status", id=1)["job"]["state"] == "lost"
    (wake,) = Wake.objects.filter(realm=realm)
    assert (wake.source, wake.ref) == ("job", 1)
    assert "was lost (its runner stopped); its effect is unknown" in wake.text
    ends = [p for p in _events(realm, Kind.JOB) if p["op"] == "end"]
    assert ends == [{"op": "end", "job": 1, "agent": "orin", "state": "lost"}]
    # Looking again finds nothing more to reap.
    orin.call("job_status")
    assert Wake.objects.filter(realm=realm).count() == 1
