"""Benchmark: matrix-nio against the platform's own httpx Matrix client (realms/herald/matrix.py).

Run: ``uv run --group bench python bench/matrix_client.py [--calls 200] [--imports 5]``.
It measures, for each client:

* ``import_s``: the time to import it in a fresh interpreter (median of ``--imports``
  runs), and the resident memory the import adds;
* ``first_s``: from nothing to the answer of the first request (the client built, its
  connection to the homeserver opened, one ``whoami`` as the application service);
* ``call_ms``: the median and p95 of ``--calls`` further ``whoami`` requests on that
  connection.

Both talk to a real Synapse over its Unix socket, in a throw-away BEARPIT_HOME. Every
call the platform makes is synchronous (a Warden tick, a provisioning step, a Django
view), and matrix-nio is asyncio only: using it there means an event loop per call or
a loop thread beside Django, on top of the numbers here. The last line is one JSON
object; docs/architecture.md records a run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.home import throwaway_home  # noqa: E402

IMPORT_PROBE = """
import resource, sys, time
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
began = time.perf_counter()
__import__(sys.argv[1])
took = time.perf_counter() - began
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(took, (after - before) / 1024)
"""


def import_cost(module: str, runs: int) -> tuple[float, float]:
    """Median seconds and MB of RSS that importing ``module`` takes in a fresh process."""
    times, sizes = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_PROBE, module],
            capture_output=True,
            text=True,
            check=True,
            cwd=REPO,
        ).stdout.split()
        times.append(float(out[0]))
        sizes.append(float(out[1]))
    return statistics.median(times), statistics.median(sizes)


def _setup_django(home: Path) -> None:
    os.environ["BEARPIT_HOME"] = str(home)
    os.environ["DJANGO_SETTINGS_MODULE"] = "bearpit.settings"
    sys.path.insert(0, str(REPO))
    import django

    django.setup()


def _summary(first_s: float, calls_s: list[float]) -> dict[str, Any]:
    ordered = sorted(calls_s)
    return {
        "first_s": round(first_s, 4),
        "call_ms_p50": round(statistics.median(ordered) * 1000, 2),
        "call_ms_p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2),
    }


def ours(socket_path: Path, server_name: str, calls: int) -> dict[str, Any]:
    from realms.herald.config import load_registration
    from realms.herald.matrix import MatrixClient

    registration = load_registration()
    began = time.perf_counter()
    client = MatrixClient(
        registration=registration, server_name=server_name, socket_path=socket_path
    )
    client.request("GET", "/_matrix/client/v3/account/whoami", what="whoami")
    first = time.perf_counter() - began
    times = []
    with client:
        for _ in range(calls):
            began = time.perf_counter()
            client.request("GET", "/_matrix/client/v3/account/whoami", what="whoami")
            times.append(time.perf_counter() - began)
    return _summary(first, times)


async def _nio(socket_path: Path, server_name: str, calls: int) -> dict[str, Any]:
    import aiohttp
    import nio

    from realms.herald.config import load_registration
    from realms.herald.matrix import UDS_HEADERS

    registration = load_registration()
    user = f"@{registration.sender_localpart}:{server_name}"
    began = time.perf_counter()
    client = nio.AsyncClient("http://homeserver", user)
    client.client_session = aiohttp.ClientSession(
        connector=aiohttp.UnixConnector(path=str(socket_path)), headers=UDS_HEADERS
    )
    client.access_token = registration.as_token
    response = await client.whoami()
    first = time.perf_counter() - began
    if not isinstance(response, nio.WhoamiResponse):
        raise RuntimeError(f"matrix-nio whoami failed: {response}")
    times = []
    try:
        for _ in range(calls):
            began = time.perf_counter()
            await client.whoami()
            times.append(time.perf_counter() - began)
    finally:
        await client.close()
    return _summary(first, times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--imports", type=int, default=5)
    args = parser.parse_args()

    result: dict[str, Any] = {}
    for name, module in (("nio", "nio"), ("ours", "realms.herald.matrix")):
        # Ours needs Django's settings only when called: importing it imports httpx.
        seconds, mb = import_cost("httpx" if name == "ours" else module, args.imports)
        result[name] = {"import_s": round(seconds, 4), "import_rss_mb": round(mb, 1)}

    _setup_django(Path(throwaway_home()))
    from django.conf import settings
    from django.core.management import call_command

    from realms.herald.config import HomeserverConfig
    from realms.herald.homeserver import free_port, start_homeserver

    call_command("migrate", verbosity=0)
    config = HomeserverConfig.from_settings(port=free_port(), platform_port=free_port())
    homeserver = start_homeserver(config)
    try:
        server_name = settings.BEARPIT_MATRIX_SERVER_NAME
        # Each twice, alternating, so neither is measured only on a cold homeserver; the
        # first call of both rounds is kept (the first round's is the cold one).
        firsts: dict[str, list[float]] = {"ours": [], "nio": []}
        runs: dict[str, Callable[[], dict[str, Any]]] = {
            "ours": lambda: ours(config.socket_path, server_name, args.calls),
            "nio": lambda: asyncio.run(_nio(config.socket_path, server_name, args.calls)),
        }
        for _ in range(2):
            for name, run in runs.items():
                row = run()
                firsts[name].append(row.pop("first_s"))
                result[name].update(row)
        for name, values in firsts.items():
            result[name]["first_s"] = values
    finally:
        homeserver.stop()
    for name, row in result.items():
        print(
            f"{name:5} import {row['import_s'] * 1000:7.1f} ms (+{row['import_rss_mb']:.1f} MB)"
            f"  first call {' / '.join(f'{v * 1000:.1f}' for v in row['first_s'])} ms"
            f"  then p50 {row['call_ms_p50']:.2f} ms, p95 {row['call_ms_p95']:.2f} ms"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
