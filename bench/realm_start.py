"""Benchmark: how long a realm takes to come alive, and what an agent costs to keep.

Run: ``uv run python bench/realm_start.py [--sizes 3,10,50]``. On a throw-away
BEARPIT_HOME it starts the embedded platform (homeserver, gateway, realmtools) and,
for each size N, launches a generated realm of N participants on the offline provider
with a kickoff that mentions everyone. It measures the time from the start of
provisioning until every agent has made its first model request (so its runtime is
up, synced to the bus and calling the gateway), the resident memory of the agent
runtimes, and the CPU time each used to get there (unlike wall time, that does not
depend on how busy the machine is). Then it runs ``examples/toolcheck`` until
``ping``'s first request and reports that request's prompt tokens. The last line is
one JSON object with ``start_s_3``, ``start_s_10``, ``start_s_50``,
``rss_mb_per_agent``, ``cpu_s_per_agent`` and ``first_request_tokens``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
import time
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
    """Mean over agents of the RSS (MB) and CPU seconds of the runtime, the largest
    process in each sandbox. CPU time does not depend on how busy the machine is."""
    from realms.forge.models import Sandbox

    rss, cpu = [], []
    for row in Sandbox.objects.filter(realm_id=realm_id, state=Sandbox.State.RUNNING):
        if row.pid:
            runtime = max(_tree(row.pid), key=_rss_kb)
            rss.append(_rss_kb(runtime) / 1024)
            cpu.append(_cpu_s(runtime))
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


def measure_start(root: Path, size: int, timeout: float) -> tuple[float, float, float]:
    from chronicle.models import Event
    from realms.services.conclude import conclude_realm
    from realms.services.launch import launch_realm
    from realms.warden import tasks

    realm = launch_realm(_write_package(root, size))
    began_ms = time.time_ns() // 1_000_000
    tasks.provision(realm.realm_id)
    provisioned = Event.objects.filter(
        realm_id=realm.realm_id, kind="lifecycle", payload__event="running"
    ).first()
    if provisioned is None:
        raise SystemExit(f"crowd-{size}: provisioning failed")
    deadline = time.monotonic() + timeout
    while True:
        tasks.tick_realm(realm.realm_id)
        first = _first_spend_ms(realm.realm_id)
        if len(first) >= size:
            took = (max(first.values()) - began_ms) / 1000
            break
        if time.monotonic() > deadline:
            took = float("nan")
            print(f"crowd-{size}: only {len(first)} of {size} agents answered in {timeout:.0f}s")
            break
        time.sleep(0.5)
    rss, cpu = _runtime_usage(realm.realm_id)
    print(
        f"{size} agents: provisioning took {(provisioned.ts_ms - began_ms) / 1000:.1f}s; "
        f"each runtime used {cpu:.2f}s CPU by its first request"
    )
    conclude_realm(realm.realm_id, "manual", "benchmark done", grace_s=0)
    return took, rss, cpu


def first_request_tokens(timeout: float) -> int:
    from chronicle.models import Event
    from realms.services.conclude import conclude_realm
    from realms.services.launch import launch_realm
    from realms.warden import tasks

    realm = launch_realm(REPO / "examples" / "toolcheck")
    tasks.provision(realm.realm_id)
    deadline = time.monotonic() + timeout
    tokens = 0
    while time.monotonic() < deadline:
        tasks.tick_realm(realm.realm_id)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3,10,50")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per size")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="bearpit-bench-") as tmp:
        root = Path(tmp)
        _setup_django(root / "home")
        from realms.services.embedded import EmbeddedPlatform

        result: dict[str, Any] = {}
        rss: list[float] = []
        cpu: list[float] = []
        with EmbeddedPlatform(print):
            for size in sizes:
                took, mb, seconds = measure_start(root, size, args.timeout)
                print(
                    f"{size} agents: all connected {took:.1f}s after provisioning began; "
                    f"{mb:.0f} MB RSS per agent runtime"
                )
                result[f"start_s_{size}"] = round(took, 2)
                rss.append(mb)
                cpu.append(seconds)
            tokens = first_request_tokens(args.timeout)
            print(f"toolcheck ping's first request: {tokens} prompt tokens")
        result["rss_mb_per_agent"] = round(max(rss), 1) if rss else None
        result["cpu_s_per_agent"] = round(max(cpu), 2) if cpu else None
        result["first_request_tokens"] = tokens
        print(json.dumps(result))


if __name__ == "__main__":
    main()
