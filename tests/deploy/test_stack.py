"""The production stack as deploy/compose.yaml runs it, each process its own OS process:
migrate, web (daphne on bearpit.asgi:application), the homeserver, the gateway,
realmtools, a Celery worker and a separate beat, with ``BEARPIT_PRODUCTION`` on against
the test run's PostgreSQL and a password-protected Redis of its own. Every process passes
its health check (deploy/healthcheck.py), a realm launched through the HTTP API reaches
the referee's verdict, and beat's tick moved it (the worker runs no beat of its own).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import psycopg
import pytest

from tests.deploy.stack import (
    PY,
    Stack,
    api,
    migrate,
    production_env,
    wait_for,
    worker_argv,
)

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(300)]


def test_the_production_stack_runs_a_realm_launched_through_the_api(
    tmp_path: Path, database: str, redis_with_password: str
) -> None:
    home = tmp_path / "home"
    env = production_env(home, database, redis_with_password, BEARPIT_HOST_ID="solo")
    token = env["BEARPIT_API_TOKEN"]
    web_port = int(env["BEARPIT_PLATFORM_PORT"])
    stack = Stack(home, env, tmp_path)
    processes = ("web", "homeserver", "gateway", "realmtools", "worker", "beat")
    # Before anything runs, every health check says so (they can fail).
    for name in processes:
        down = stack.check(name)
        assert down.returncode == 1 and down.stderr.startswith(f"{name}: unhealthy: "), down
    # A production worker without a host id refuses to start, with one line.
    nameless = {k: v for k, v in env.items() if k != "BEARPIT_HOST_ID"}
    refused = subprocess.run(
        worker_argv(), cwd=stack.logs, env=nameless, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.strip().splitlines()[-1] == (
        "celery worker: cannot start: BEARPIT_HOST_ID: required for a worker when "
        "BEARPIT_PRODUCTION is on (a name for this worker host, unique among the hosts "
        "sharing the database)"
    )
    try:
        migrate(env)
        stack.start("web", [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(web_port),
                            "bearpit.asgi:application"])  # fmt: skip
        stack.start("homeserver", [PY, "manage.py", "pit_homeserver"])
        stack.start("gateway", [PY, "manage.py", "pit_gateway"])
        stack.start("realmtools", [PY, "manage.py", "pit_realmtools"])
        stack.start("worker", worker_argv("solo"))
        stack.start("beat", [PY, "-m", "celery", "-A", "bearpit", "beat", "--loglevel", "INFO"])
        for name in processes:
            wait_for(lambda name=name: stack.healthy(name), f"{name} to be healthy", 120)  # type: ignore[misc]

        launched = api(web_port, token, "POST", "/api/realms",
                       {"package": "toolcheck", "realm_id": "deploy-1"})  # fmt: skip
        assert launched == {"realm_id": "deploy-1", "state": "starting"}

        def ended() -> bool:
            state = api(web_port, token, "GET", "/api/realms/deploy-1")
            return state["state"] in ("archived", "failed", "interrupted")  # type: ignore[index]

        wait_for(ended, "the realm to end", 200)
        realm = api(web_port, token, "GET", "/api/realms/deploy-1")
        listed = api(web_port, token, "GET", "/api/realms")
    finally:
        stack.stop_all()
    logs = "\n".join(f"--- {name}\n{stack.log(name)}" for name in stack.procs)
    assert realm["state"] == "archived", logs  # type: ignore[index]
    # The realm ran on the one worker host, which took it from the shared queue.
    assert [r["host"] for r in listed["realms"]] == ["solo"], listed  # type: ignore[index]
    with psycopg.connect(database) as conn:
        verdicts = conn.execute(
            "SELECT payload FROM chronicle_event WHERE realm_id = 'deploy-1' AND kind = 'verdict'"
        ).fetchall()
    assert [v[0]["outcome"] for v in verdicts] == ["ping wins the relay"], logs
    # The ticks came from the separate beat: it sent them, the worker ran them.
    # The whole log: what beat prints as it stops can fill the tail the others show.
    beat_log = (stack.logs / "beat.log").read_text(errors="replace")
    assert "Sending due task" in beat_log and "warden.tick_all" in beat_log, logs
    # ... on the host's own queue: the worker consumed it beside the shared one.
    worker_log = (stack.logs / "worker.log").read_text(errors="replace")
    assert "host.solo" in worker_log and "worker host solo is up" in worker_log, logs
