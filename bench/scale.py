"""Benchmark: realms per worker host and agents per realm on this machine, one worker host
against two, on the production-shaped stack.

Run: ``scripts/test-servers uv run python bench/scale.py [--cases 1x3,2x3,4x3,1x8]``
(``scripts/test-servers`` provides the throw-away PostgreSQL; the bench starts its own
password-protected Redis). Each process is its own OS process, as in
``tests/deploy/test_hosts.py``: web, the homeserver and beat once; per worker host a
worker, a gateway, realmtools (and on the second a relay to the homeserver), each host
with its own home. For every case ``RxA`` (R realms of A agents on the offline provider,
launched at once through the API) and for one and for two worker hosts it measures:

* ``start``: launch → every agent of the realm traced ``connected`` (median and slowest);
* ``tick``: the mean interval between two Warden ticks of a running realm (beat asks for
  one every ``BEARPIT_TICK_SECONDS``, 0.5 here), over a 6-second window;
* ``bus lag``: an operator message posted through the API → chronicled (through the
  homeserver and its push to web), median over the realms;
* ``memory``: resident memory of the workers, gateways, realmtools and every sandbox.

The two hosts share this machine's two cores, so the second host adds processes rather
than cores: the figures show what splitting costs and how placement spreads the load,
not a speed-up. The table lists every run; the last line is one JSON object with each
case's figures and, per case, the two-host figures as ratios against the one-host run
measured in the same invocation.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

import psycopg

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.deploy.stack import (  # noqa: E402  (after the path)
    PY,
    Stack,
    api,
    migrate,
    production_env,
    wait_for,
    worker_argv,
)
from tests.e2e.pitrun import free_port  # noqa: E402
from tests.fixtures.postgres import fresh_database  # noqa: E402

HOST_IDS = ("alpha", "beta")
TICK_WINDOW_S = 6.0


@dataclass(frozen=True)
class Run:
    hosts: int
    realms: int
    agents: int
    start_median_s: float
    start_max_s: float
    tick_interval_s: float
    bus_lag_ms: float
    memory_mb: float
    placed: str  # how many realms each host took


def _write_package(root: Path, agents: int) -> Path:
    package = root / f"crowd{agents}"
    (package / "agents").mkdir(parents=True)
    project = {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": f"crowd{agents}", "description": "Scale benchmark."},
        "spec": {
            "goals": ["Say hello once when you are mentioned."],
            "environment": {"require_mention": True, "allow_side_channels": False},
            "termination": [{"type": "duration", "limit": "30m"}],
            "provide_tools": False,
            "stall_nudge": False,
        },
    }
    (package / "project.json").write_text(json.dumps(project))
    for i in range(agents):
        agent = package / "agents" / f"a{i:03d}"
        agent.mkdir()
        (agent / "agent.json").write_text(
            json.dumps({"id": f"a{i:03d}", "model_category": "small", "budget": {"max_usd": 0.1}})
        )
    return package


@contextmanager
def _redis(root: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if not server:
        raise SystemExit("redis-server is not installed (scripts/test --setup installs it)")
    port, password = free_port(), secrets.token_hex(16)
    proc = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--requirepass", password, "--dir", str(root)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        time.sleep(0.5)
        yield f"redis://:{password}@127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def _connected_ms(home: Path, realm_id: str, agents: int) -> int | None:
    """When the realm's last agent traced ``connected`` (epoch ms), None before."""
    stamps = []
    for i in range(agents):
        trace = home / "realms" / realm_id / "agents" / f"a{i:03d}" / "home" / ".bearpit"
        try:
            lines = (trace / "trace.jsonl").read_text(encoding="utf-8").splitlines()
        except OSError:
            return None
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "connected":
                when = datetime.fromisoformat(record["ts"].replace("Z", "+00:00"))
                stamps.append(int(when.timestamp() * 1000))
                break
        else:
            return None
    return max(stamps)


class Deployment:
    """The stack with ``hosts`` worker hosts on database ``db``."""

    def __init__(self, root: Path, db: str, redis_url: str, hosts: int) -> None:
        self.homes = {h: root / f"{h}-{hosts}" for h in HOST_IDS[:hosts]}
        base = production_env(
            self.homes["alpha"], db, redis_url,
            BEARPIT_HOST_CAPACITY="16", BEARPIT_MAX_ACTIVE_REALMS="32",
        )  # fmt: skip
        self.token, self.port = base["BEARPIT_API_TOKEN"], int(base["BEARPIT_PLATFORM_PORT"])
        registration = self.homes["alpha"] / "homeserver" / "registration.yaml"
        self.envs = {
            h: {
                **base,
                "BEARPIT_HOST_ID": h,
                "BEARPIT_HOME": str(home),
                "BEARPIT_GATEWAY_PORT": str(free_port()),
                **({"BEARPIT_MATRIX_REGISTRATION": str(registration)} if h != "alpha" else {}),
            }
            for h, home in self.homes.items()
        }
        logs = root / f"logs-{hosts}"
        logs.mkdir()
        self.stacks = {h: Stack(self.homes[h], self.envs[h], logs) for h in self.homes}

    def start(self, package_dirs: list[Path]) -> None:
        alpha = self.stacks["alpha"]
        migrate(alpha.env)
        for package in package_dirs:
            subprocess.run(
                [PY, "manage.py", "pit_library", "import", str(package)],
                cwd=REPO, env=alpha.env, check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        alpha.start("web", [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                            "bearpit.asgi:application"])  # fmt: skip
        alpha.start("homeserver", [PY, "manage.py", "pit_homeserver"])
        alpha.start("beat", [PY, "-m", "celery", "-A", "bearpit", "beat", "--loglevel", "WARNING"])
        wait_for(lambda: alpha.healthy("homeserver"), "the homeserver", 180)
        socket = self.homes["alpha"] / "run" / "homeserver.sock"
        checks: list[tuple[Stack, str, str]] = [(alpha, "web", "web")]
        for host, stack in self.stacks.items():
            if host != "alpha":
                stack.start(f"{host}-relay", [PY, "manage.py", "pit_bus_relay",
                                              "--to", f"unix:{socket}"])  # fmt: skip
                checks.append((stack, f"{host}-relay", "homeserver"))
            stack.start(f"{host}-gateway", [PY, "manage.py", "pit_gateway"])
            stack.start(f"{host}-realmtools", [PY, "manage.py", "pit_realmtools"])
            stack.start(f"{host}-worker", worker_argv(host))
            checks += [(stack, f"{host}-{k}", k) for k in ("gateway", "realmtools", "worker")]
        for stack, name, kind in checks:
            wait_for(lambda s=stack, n=name, k=kind: s.healthy(n, k), name, 180)  # type: ignore[misc]

    def stop(self) -> None:
        for stack in self.stacks.values():
            stack.stop_all()

    def memory_mb(self, db: str, realm_ids: list[str]) -> float:
        pids = [p.pid for s in self.stacks.values() for n, p in s.procs.items()
                if not n.startswith(("web", "homeserver", "beat"))]  # fmt: skip
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT pid FROM forge_sandbox WHERE realm_id = ANY(%s) AND pid IS NOT NULL "
                "AND state = 'running'",
                (realm_ids,),
            ).fetchall()
        pids += [r[0] for r in rows]
        seen = {pid for top in pids for pid in _tree(top)}
        return sum(_rss_kb(pid) for pid in seen) / 1024


def measure(dep: Deployment, db: str, tag: str, realms: int, agents: int) -> Run:
    ids = [f"{tag}-{realms}x{agents}-{i}" for i in range(realms)]
    launched = {}
    for realm_id in ids:
        launched[realm_id] = time.time()
        api(dep.port, dep.token, "POST", "/api/realms",
            {"package": f"crowd{agents}", "realm_id": realm_id})  # fmt: skip
    hosts_of: dict[str, str] = {}

    def started() -> bool:
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT realm_id, host_id FROM realms_realm WHERE realm_id = ANY(%s)", (ids,)
            ).fetchall()
        hosts_of.update({r: h for r, h in rows if h})
        return all(
            realm_id in hosts_of
            and _connected_ms(dep.homes[hosts_of[realm_id]], realm_id, agents) is not None
            for realm_id in ids
        )

    wait_for(started, f"{realms}x{agents} to start", 600)
    starts = [
        _connected_ms(dep.homes[hosts_of[r]], r, agents) / 1000 - launched[r]  # type: ignore[operator]
        for r in ids
    ]

    def ticks() -> dict[str, int]:
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT r.realm_id, w.ticks FROM warden_wardenstate w JOIN realms_realm r "
                "ON w.realm_id = r.id WHERE r.realm_id = ANY(%s)",
                (ids,),
            ).fetchall()
        return dict(rows)

    first = ticks()
    time.sleep(TICK_WINDOW_S)
    last = ticks()
    intervals = [TICK_WINDOW_S / max(last[r] - first[r], 1) for r in ids]

    lags = []
    for realm_id in ids:
        text = f"bench ping {secrets.token_hex(4)}"
        sent = time.time()
        api(dep.port, dep.token, "POST", f"/api/realms/{realm_id}/msg", {"text": text})

        def chronicled(realm_id: str = realm_id, text: str = text) -> bool:
            with psycopg.connect(db) as conn:
                return bool(
                    conn.execute(
                        "SELECT 1 FROM chronicle_message WHERE realm_id = %s AND body LIKE %s",
                        (realm_id, f"%{text}%"),
                    ).fetchone()
                )

        while not chronicled():
            if time.time() - sent > 60:
                break
            time.sleep(0.02)
        lags.append((time.time() - sent) * 1000)
    memory = dep.memory_mb(db, ids)
    for realm_id in ids:
        api(dep.port, dep.token, "POST", f"/api/realms/{realm_id}/stop")

    def ended() -> bool:
        with psycopg.connect(db) as conn:
            rows = conn.execute(
                "SELECT count(*) FROM realms_realm WHERE realm_id = ANY(%s) AND state IN "
                "('archived', 'failed', 'interrupted')",
                (ids,),
            ).fetchone()
        return rows is not None and rows[0] == len(ids)

    wait_for(ended, f"{realms}x{agents} to end", 300)
    per_host = {h: sum(1 for r in ids if hosts_of.get(r) == h) for h in dep.homes}
    return Run(
        hosts=len(dep.homes),
        realms=realms,
        agents=agents,
        start_median_s=round(statistics.median(starts), 2),
        start_max_s=round(max(starts), 2),
        tick_interval_s=round(statistics.mean(intervals), 3),
        bus_lag_ms=round(statistics.median(lags), 1),
        memory_mb=round(memory, 1),
        placed="/".join(str(per_host[h]) for h in dep.homes),
    )


def _table(runs: list[Run]) -> None:
    head = ("hosts", "realms", "agents", "start p50", "start max", "tick", "bus lag", "RSS",
            "placed")  # fmt: skip
    print(" | ".join(head))
    for r in runs:
        print(
            f"{r.hosts} | {r.realms} | {r.agents} | {r.start_median_s:.2f}s | "
            f"{r.start_max_s:.2f}s | {r.tick_interval_s:.3f}s | {r.bus_lag_ms:.0f}ms | "
            f"{r.memory_mb:.0f}MB | {r.placed}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="1x3,2x3,4x3,1x8", help="RxA: R realms of A agents")
    parser.add_argument("--hosts", default="1,2", help="worker host counts to compare")
    args = parser.parse_args()
    cases = [tuple(int(n) for n in c.split("x")) for c in args.cases.split(",")]
    host_counts = [int(n) for n in args.hosts.split(",")]
    if not os.environ.get("BEARPIT_TEST_POSTGRES_URL"):
        raise SystemExit("run it under scripts/test-servers (it needs a PostgreSQL)")
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bearpit-scale-") as tmp:
        root = Path(tmp)
        packages = [_write_package(root / "packages", a) for a in sorted({a for _, a in cases})]
        with _redis(root) as redis_url:
            for hosts in host_counts:
                with fresh_database("scale") as db:
                    dep = Deployment(root, db, redis_url, hosts)
                    try:
                        dep.start(packages)
                        for realms, agents in cases:
                            runs.append(measure(dep, db, f"h{hosts}", realms, agents))
                            print(f"# {runs[-1]}", flush=True)
                    finally:
                        dep.stop()
    _table(runs)
    load = os.getloadavg()
    result: dict[str, object] = {
        "load_avg_1m": round(load[0], 2),
        "cpus": os.cpu_count(),
        "runs": [asdict(r) for r in runs],
    }
    one = {(r.realms, r.agents): r for r in runs if r.hosts == 1}
    ratios = {}
    for r in runs:
        ref = one.get((r.realms, r.agents))
        if r.hosts == 2 and ref is not None:
            ratios[f"{r.realms}x{r.agents}"] = {
                "start_p50": round(r.start_median_s / ref.start_median_s, 2),
                "tick": round(r.tick_interval_s / ref.tick_interval_s, 2),
                "bus_lag": round(r.bus_lag_ms / max(ref.bus_lag_ms, 0.1), 2),
                "memory": round(r.memory_mb / ref.memory_mb, 2),
            }
    result["two_hosts_vs_one"] = ratios
    print(f"load average: {' '.join(f'{x:.2f}' for x in load)}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
