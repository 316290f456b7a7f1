"""Two worker hosts on one database and one broker, each process its own OS process.

Host ``alpha`` runs the shared parts (web, the homeserver, beat) beside its own gateway,
realmtools and worker; host ``beta`` has a home of its own (its sandboxes, sockets and
mounts) with its own gateway, realmtools, a relay to the shared homeserver, and a worker.
Each takes one realm (capacity 1): two realms launched at once land on different hosts.
The worker of the host running the long realm is SIGKILLed mid-realm: a surviving host
concludes that realm ``interrupted`` with a report, its keys revoked and its bus closed,
its Chronicle kept, while the other realm reaches its verdict. The dead host's worker
comes back under the same id and reaps what the interrupted realm left on it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.deploy.stack import PY, Stack, api, migrate, production_env, wait_for, worker_argv
from tests.e2e.pitrun import REPO, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(420)]

HOSTS = ("alpha", "beta")


def _slow_package(tmp_path: Path) -> Path:
    """toolcheck whose umpire opens the round and then never rules: a realm that keeps
    running until something ends it."""
    root = tmp_path / "slowcheck"
    shutil.copytree(REPO / "examples" / "toolcheck", root)
    (root / "offline" / "umpire.yaml").write_text(
        'idle: ""\nsteps:\n  - match: "You open the realm"\n'
        '    text: "Round R1 starts. First word: blue. Take your time."\n',
        encoding="utf-8",
    )
    return root


def _text(port: int, token: str, path: str) -> str:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (loopback)
        return str(response.read().decode())


def _rows(database: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(database) as conn:
        return conn.execute(sql, args).fetchall()


def _event_ids(database: str, realm_id: str) -> set[int]:
    rows = _rows(database, "SELECT id FROM chronicle_event WHERE realm_id = %s", realm_id)
    return {r[0] for r in rows}


def test_two_worker_hosts_place_by_capacity_and_survive_one_dying(
    tmp_path: Path, database: str, redis_with_password: str
) -> None:
    homes = {h: tmp_path / h for h in HOSTS}
    shared = production_env(
        homes["alpha"], database, redis_with_password,
        BEARPIT_HOST_CAPACITY="1", BEARPIT_HOST_HEARTBEAT_S="1", BEARPIT_HOST_DEAD_AFTER="5",
    )  # fmt: skip
    envs = {
        "alpha": {**shared, "BEARPIT_HOST_ID": "alpha"},
        "beta": {
            **shared,
            "BEARPIT_HOST_ID": "beta",
            "BEARPIT_HOME": str(homes["beta"]),
            "BEARPIT_GATEWAY_PORT": str(free_port()),
            # The one homeserver's application-service registration, shared by the hosts.
            "BEARPIT_MATRIX_REGISTRATION": str(homes["alpha"] / "homeserver" / "registration.yaml"),
        },
    }
    token, web_port = shared["BEARPIT_API_TOKEN"], int(shared["BEARPIT_PLATFORM_PORT"])
    logs = tmp_path / "logs"
    logs.mkdir()
    stacks = {h: Stack(homes[h], envs[h], logs) for h in HOSTS}
    alpha, beta = stacks["alpha"], stacks["beta"]
    slow = _slow_package(tmp_path)
    try:
        migrate(envs["alpha"])
        done = subprocess.run(
            [PY, "manage.py", "pit_library", "import", str(slow), "--name", "slowcheck"],
            cwd=REPO, env=alpha.env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        alpha.start("web", [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(web_port),
                            "bearpit.asgi:application"])  # fmt: skip
        alpha.start("homeserver", [PY, "manage.py", "pit_homeserver"])
        alpha.start("beat", [PY, "-m", "celery", "-A", "bearpit", "beat", "--loglevel", "INFO"])
        wait_for(lambda: alpha.healthy("homeserver"), "the homeserver", 150)
        hs_socket = homes["alpha"] / "run" / "homeserver.sock"
        beta.start("beta-relay", [PY, "manage.py", "pit_bus_relay", "--to", f"unix:{hs_socket}"])
        for host, stack in stacks.items():
            stack.start(f"{host}-gateway", [PY, "manage.py", "pit_gateway"])
            stack.start(f"{host}-realmtools", [PY, "manage.py", "pit_realmtools"])
            stack.start(f"{host}-worker", worker_argv(host))
        checks = [(alpha, "web"), (alpha, "beat"), (beta, "beta-relay")]
        for host, stack in stacks.items():
            checks += [(stack, f"{host}-{kind}") for kind in ("gateway", "realmtools", "worker")]
        for stack, name in checks:
            kind = name.split("-")[-1].replace("relay", "homeserver")
            wait_for(lambda s=stack, n=name, k=kind: s.healthy(n, k), f"{name}", 150)  # type: ignore[misc]

        hosts = api(web_port, token, "GET", "/api/hosts")["hosts"]  # type: ignore[index]
        assert [(h["host_id"], h["state"], h["capacity"]) for h in hosts] == [
            ("alpha", "up", 1), ("beta", "up", 1),
        ]  # fmt: skip

        for package, realm_id in (("slowcheck", "slow-1"), ("toolcheck", "quick-1")):
            launched = api(web_port, token, "POST", "/api/realms",
                           {"package": package, "realm_id": realm_id})  # fmt: skip
            assert launched == {"realm_id": realm_id, "state": "starting"}

        def placed() -> dict[str, str | None]:
            listed = api(web_port, token, "GET", "/api/realms")["realms"]  # type: ignore[index]
            return {r["realm_id"]: r["host"] for r in listed}

        def slow_running() -> bool:
            state = api(web_port, token, "GET", "/api/realms/slow-1")["state"]  # type: ignore[index]
            return state == "running" and None not in placed().values()

        wait_for(slow_running, "both realms placed and slow-1 running", 150)
        where = placed()
        # One realm per host: capacity 1 each.
        assert sorted(where.values()) == ["alpha", "beta"], where  # type: ignore[type-var]
        victim = where["slow-1"]
        assert victim is not None
        survivor = "beta" if victim == "alpha" else "alpha"
        before = _event_ids(database, "slow-1")
        stacks[victim].kill(f"{victim}-worker")

        def ended(realm_id: str) -> bool:
            state = api(web_port, token, "GET", f"/api/realms/{realm_id}")["state"]  # type: ignore[index]
            return state in ("archived", "failed", "interrupted")

        wait_for(lambda: ended("slow-1") and ended("quick-1"), "both realms to end", 200)
        slow_state = api(web_port, token, "GET", "/api/realms/slow-1")
        quick_state = api(web_port, token, "GET", "/api/realms/quick-1")
        report = _text(web_port, token, "/api/realms/slow-1/report")
        hosts_after = {
            h["host_id"]: h
            for h in api(web_port, token, "GET", "/api/hosts")["hosts"]  # type: ignore[index]
        }
        left = _rows(database, "SELECT state FROM forge_sandbox WHERE realm_id = 'slow-1'")

        # The dead host comes back under the same id and reaps before it takes work.
        stacks[victim].start(f"{victim}-worker-again", worker_argv(victim))
        wait_for(lambda: stacks[victim].healthy(f"{victim}-worker-again", "worker"), "return", 150)
        back = {
            h["host_id"]: h
            for h in api(web_port, token, "GET", "/api/hosts")["hosts"]  # type: ignore[index]
        }
        after_reap = _rows(database, "SELECT state FROM forge_sandbox WHERE realm_id = 'slow-1'")
        mounts = Path("/proc/self/mounts").read_text()
    finally:
        for stack in stacks.values():
            stack.stop_all()
    every = "\n".join(
        f"--- {name}\n{stack.log(name)}" for stack in stacks.values() for name in stack.procs
    )
    assert quick_state["state"] == "archived", every  # type: ignore[index]
    verdicts = _rows(
        database,
        "SELECT payload FROM chronicle_event WHERE realm_id = 'quick-1' AND kind = 'verdict'",
    )
    assert [v[0]["outcome"] for v in verdicts] == ["ping wins the relay"], every
    assert where["quick-1"] == survivor
    # The killed host's realm: interrupted, with the reason in its report.
    assert slow_state["state"] == "interrupted", every  # type: ignore[index]
    assert f"worker host {victim} stopped answering" in json.dumps(slow_state), slow_state
    assert "interrupted" in report and f"worker host {victim} stopped answering" in report
    # Nothing chronicled before the kill was lost.
    assert before and before <= _event_ids(database, "slow-1")
    # Its keys revoked, its bus users closed.
    keys = _rows(database, "SELECT revoked_at FROM ledger_virtualkey WHERE realm_id = 'slow-1'")
    assert keys and all(k[0] is not None for k in keys), keys
    users = _rows(
        database,
        "SELECT u.deactivated FROM herald_bususer u JOIN herald_busrealm b ON u.bus_id = b.id "
        "WHERE b.realm_id = 'slow-1'",
    )
    assert users and all(u[0] for u in users), users
    assert hosts_after[victim]["state"] == "dead" and hosts_after[survivor]["state"] == "up"
    # The survivor left the dead host's sandboxes alone; the returning host reaped them.
    assert left and any(s[0] == "running" for s in left), left
    assert back[victim]["state"] == "up", back
    assert after_reap and all(s[0] in ("stopped", "failed") for s in after_reap), after_reap
    assert str(homes[victim] / "realms" / "slow-1") not in mounts
