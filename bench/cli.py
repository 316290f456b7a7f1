"""Benchmark: how long the read-only ``pit`` commands take, start to exit.

Run: ``uv run python bench/cli.py [--repeat 5] [--home DIR]``. Without ``--home`` it makes
a throw-away BEARPIT_HOME, migrates it and chronicles one small realm (a running event
with its config, 200 trace records, 40 messages, a verdict) so every command has
something to read. Each command runs ``--repeat`` times as a subprocess; the table gives
the median wall time and the median CPU time (user + system, which depends less on how
busy the machine is), beside ``python -c "import django"`` measured in the same run as
the floor. The last line is one JSON object with ``<command>_s`` (median wall) and
``<command>_cpu_s`` for each.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REALM = "bench-cli0001"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BEARPIT_")}
    env.update(BEARPIT_HOME=str(home), DJANGO_SETTINGS_MODULE="bearpit.settings")
    return env


SEED = f"""
from chronicle.kinds import Kind
from chronicle.models import Message
from chronicle.services import record_event
from realms.models import Realm

Realm.objects.create(realm_id={REALM!r}, package_name="toolcheck", state="archived")
config = {{"referee": "umpire", "require_mention": True, "agents": [
    {{"id": "ping", "role": "participant"}}, {{"id": "umpire", "role": "referee"}}]}}
record_event({REALM!r}, Kind.LIFECYCLE,
             {{"event": "running", "commons_room": "!c:b", "config": config}}, ts_ms=1000)
for i in range(200):
    record_event({REALM!r}, Kind.TRACE, {{"agent_id": "ping", "run_id": "r", "seq": i,
        "type": "tool_call", "data": {{"name": "relay", "arguments": "{{}}"}}}}, ts_ms=2000 + i)
for i in range(40):
    Message.objects.create(realm_id={REALM!r}, channel="!c:b", sender="@p:b",
                           sender_agent="ping", body=f"move {{i}}", ts_ms=3000 + i,
                           matrix_event_id=f"$e{{i}}")
record_event({REALM!r}, Kind.VERDICT, {{"outcome": "ping wins"}}, ts_ms=4000)
record_event({REALM!r}, Kind.LIFECYCLE, {{"event": "archived"}}, ts_ms=5000)
"""


def _seed(home: Path) -> None:
    env = _env(home)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=REPO, env=env, check=True)
    subprocess.run([*manage, "shell", "-c", SEED], cwd=REPO, env=env, check=True)


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(argv, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--home", type=Path, help="an existing BEARPIT_HOME to read")
    parser.add_argument("--realm", default=REALM, help="the realm the commands read")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        home = args.home or Path(scratch) / "home"
        if args.home is None:
            _seed(home)
        env = _env(home)
        manage = [sys.executable, "manage.py"]
        commands = {
            "import_django": [sys.executable, "-c", "import django"],
            "pit_status": [*manage, "pit_status", args.realm],
            "pit_tail": [*manage, "pit_tail", args.realm],
            "pit_trace": [*manage, "pit_trace", "-r", args.realm],
            "pit_realms": [*manage, "pit_realms"],
            "pit_validate": [*manage, "pit_validate", "examples/toolcheck"],
        }
        result: dict[str, float] = {}
        print(f"{'command':<14} {'wall s':>8} {'cpu s':>8}   (median of {args.repeat})")
        for name, argv in commands.items():
            runs = [_time(argv, env) for _ in range(args.repeat)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            result[f"{name}_s"] = round(wall, 3)
            result[f"{name}_cpu_s"] = round(cpu, 3)
            print(f"{name:<14} {wall:>8.3f} {cpu:>8.3f}")
        print(f"load average (1 min): {os.getloadavg()[0]:.2f}")
        print(json.dumps(result))


if __name__ == "__main__":
    main()
