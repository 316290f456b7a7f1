"""Benchmark: how long a realm takes to come alive, and what an agent costs to keep.

Run: ``uv run python bench/realm_start.py [--sizes 3,10,50] [--repeat 3]``. On a throw-away
BEARPIT_HOME it starts the embedded platform (homeserver, gateway, realmtools) and, for
each size N, launches a generated realm of N participants on the offline provider with a
kickoff that mentions everyone. For each realm it measures, from the start of
provisioning:

* ``connected``: every agent's runtime has traced ``connected`` (its MCP sessions are open
  and its first bus sync is done): what counts as started;
* ``answered``: every agent's first model call has been metered by the gateway (so it also
  received the kickoff and called the model);

and the resident memory of each agent's sandbox (its runtime and the sandbox's own
processes) and the CPU time each runtime used (unlike wall time, CPU time does not
depend on how busy the machine is). Sizes below 20 run
``--repeat`` times and report the median; the table lists every run. Then it runs
``examples/toolcheck`` until ``ping``'s first request and reports that request's prompt
tokens. The last line is one JSON object with ``start_s_<N>`` (connected),
``answered_s_<N>``, ``rss_mb_per_agent``, ``cpu_s_per_agent`` and ``first_request_tokens``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _setup_django(home: Path) -> None:
    os.environ["BEARPIT_HOME"] = str(home)
    os.environ["BEARPIT_PLATFORM_PORT"] = str(_free_port())
    os.environ["BEARPIT_CONCLUDE_GRACE_S"] = "0"
    os.environ["DJANGO_SETTINGS_MODULE"] = "bearpit.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def _write_package(root: Path, size: int) -> Path:
    package = root / f"crowd-{size}"
    (package / "agents").mkdir(parents=True)
    project = {
        "apiVersion": "bearpit/v1alpha1",
        "kind": "Project",
        "metadata": {"name": f"crowd-{size}", "description": "Start-up benchmark."},
        "spec": {
            "goals": ["Say hello once when you are mentioned."],
            "environment": {"require_mention": True, "allow_side_channels": False},
            "termination": [{"type": "duration", "limit": "30m"}],
            "provide_tools": False,
            "stall_nudge": False,
        },
    }
    (package / "project.json").write_text(json.dumps(project))
    for i in range(size):
        agent = package / "agents" / f"a{i:03d}"
        agent.mkdir()
        (agent / "agent.json").write_text(
            json.dumps({"id": f"a{i:03d}", "model_category": "small", "budget": {"max_usd": 0.1}})
        )
    return package


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return out


def _cpu_s(pid: int) -> float:
    """User plus system CPU seconds a process has used."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _runtime_usage(realm_id: str) -> tuple[float, float]:
    """Mean over agents of the RSS (MB) of the whole sandbox (the runtime and the
    sandbox's own processes) and of the CPU seconds of the runtime, the largest process
    in it. CPU time does not depend on how busy the machine is."""
    from realms.forge.models import Sandbox

    rss, cpu = [], []
    for row in Sandbox.objects.filter(realm_id=realm_id, state=Sandbox.State.RUNNING):
        if row.pid:
            tree = _tree(row.pid)
            rss.append(sum(_rss_kb(pid) for pid in tree) / 1024)
            cpu.append(_cpu_s(max(tree, key=_rss_kb)))
    if not rss:
        return 0.0, 0.0
    return sum(rss) / len(rss), sum(cpu) / len(cpu)


def _first_spend_ms(realm_id: str) -> dict[str, int]:
    from chronicle.models import Event

    first: dict[str, int] = {}
    for payload, ts in Event.objects.filter(realm_id=realm_id, kind="spend").values_list(
        "payload", "ts_ms"
    ):
        first.setdefault(str(payload.get("agent")), ts)
    return first


def _connected_ms(realm_id: str) -> dict[str, int]:
    """agent id → when its runtime traced ``connected`` (MCP sessions open, bus synced),
    read from the trace in its home."""
    from datetime import datetime

    from realms.forge import layout
    from realms.models import RealmAgent

    found: dict[str, int] = {}
    for agent_id in RealmAgent.objects.filter(realm__realm_id=realm_id).values_list(
        "agent_id", flat=True
    ):
        trace = layout.home_dir(realm_id, agent_id) / ".bearpit" / "trace.jsonl"
        try:
            lines = trace.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for line in lines:
            record = json.loads(line)
            if record.get("type") == "connected":
                when = datetime.fromisoformat(record["ts"].replace("Z", "+00:00"))
                found[agent_id] = int(when.timestamp() * 1000)
                break
    return found


@dataclass(frozen=True)
class StartRun:
    size: int
    provisioned_s: float  # provisioning began → lifecycle ``running``
    connected_s: float  # provisioning began → every agent traced ``connected``
    answered_s: float  # provisioning began → every agent's first model call was metered
    rss_mb: float
    cpu_s: float


def _seconds_until_all(began_ms: int, stamps: dict[str, int], size: int) -> float | None:
    return (max(stamps.values()) - began_ms) / 1000 if len(stamps) >= size else None


def measure_start(root: Path, size: int, timeout: float) -> StartRun:
    from chronicle.models import Event
    from realms.services.conclude import conclude_realm
    from realms.services.launch import launch_realm
    from realms.services.provision import bring_up_realm
    from realms.warden.watch import finish_concluding, tick_realm

    realm = launch_realm(_write_package(root, size))
    began_ms = time.time_ns() // 1_000_000
    bring_up_realm(realm.realm_id)
    provisioned = Event.objects.filter(
        realm_id=realm.realm_id, kind="lifecycle", payload__event="running"
    ).first()
    if provisioned is None:
        raise SystemExit(f"crowd-{size}: provisioning failed")
    deadline = time.monotonic() + timeout
    connected = answered = None
    while connected is None or answered is None:
        ticked = tick_realm(realm.realm_id)
        if ticked is not None and ticked.concluded is not None:
            finish_concluding(realm.realm_id)  # the realm ended by itself
        connected = _seconds_until_all(began_ms, _connected_ms(realm.realm_id), size)
        answered = _seconds_until_all(began_ms, _first_spend_ms(realm.realm_id), size)
        if time.monotonic() > deadline:
            print(f"crowd-{size}: not every agent connected and answered in {timeout:.0f}s")
            break
        time.sleep(0.2)
    rss, cpu = _runtime_usage(realm.realm_id)
    conclude_realm(realm.realm_id, "manual", "benchmark done", grace_s=0)
    return StartRun(
        size=size,
        provisioned_s=(provisioned.ts_ms - began_ms) / 1000,
        connected_s=float("nan") if connected is None else connected,
        answered_s=float("nan") if answered is None else answered,
        rss_mb=rss,
        cpu_s=cpu,
    )


def first_request_tokens(timeout: float) -> int:
    from chronicle.models import Event
    from realms.services.conclude import conclude_realm
    from realms.services.launch import launch_realm
    from realms.services.provision import bring_up_realm
    from realms.warden.watch import finish_concluding, tick_realm

    realm = launch_realm(REPO / "examples" / "toolcheck")
    bring_up_realm(realm.realm_id)
    deadline = time.monotonic() + timeout
    tokens = 0
    while time.monotonic() < deadline:
        ticked = tick_realm(realm.realm_id)
        if ticked is not None and ticked.concluded is not None:
            finish_concluding(realm.realm_id)  # the realm ended by itself
        spend = (
            Event.objects.filter(realm_id=realm.realm_id, kind="spend", payload__agent="ping")
            .order_by("id")
            .first()
        )
        if spend is not None:
            tokens = int(spend.payload.get("tokens_in") or 0)
            break
        time.sleep(0.5)
    conclude_realm(realm.realm_id, "manual", "benchmark done", grace_s=0)
    return tokens


def _table(runs: list[StartRun]) -> None:
    print(
        f"{'agents':>6} {'provisioned s':>13} {'connected s':>11} {'answered s':>10} "
        f"{'RSS MB/agent':>12} {'CPU s/agent':>11}"
    )
    for run in runs:
        print(
            f"{run.size:>6} {run.provisioned_s:>13.2f} {run.connected_s:>11.2f} "
            f"{run.answered_s:>10.2f} {run.rss_mb:>12.1f} {run.cpu_s:>11.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,10,50")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per size below 20 agents (median reported)"
    )
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="bearpit-bench-") as tmp:
        root = Path(tmp)
        _setup_django(root / "home")
        from realms.embedded.platform import EmbeddedPlatform

        result: dict[str, Any] = {}
        runs: list[StartRun] = []
        with EmbeddedPlatform(print):
            for size in sizes:
                mine = []
                for attempt in range(max(1, args.repeat) if size < 20 else 1):
                    folder = root / f"crowd-{size}-{attempt}"
                    folder.mkdir()
                    mine.append(measure_start(folder, size, args.timeout))
                    print(
                        f"{size} agents: connected {mine[-1].connected_s:.2f}s, "
                        f"answered {mine[-1].answered_s:.2f}s after provisioning began"
                    )
                runs += mine
                result[f"start_s_{size}"] = round(statistics.median(r.connected_s for r in mine), 2)
                result[f"answered_s_{size}"] = round(
                    statistics.median(r.answered_s for r in mine), 2
                )
            tokens = first_request_tokens(args.timeout)
        _table(runs)
        print(f"toolcheck ping's first request: {tokens} prompt tokens")
        result["rss_mb_per_agent"] = round(max(r.rss_mb for r in runs), 1) if runs else None
        result["cpu_s_per_agent"] = round(max(r.cpu_s for r in runs), 2) if runs else None
        result["first_request_tokens"] = tokens
        print(json.dumps(result))


if __name__ == "__main__":
    main()
