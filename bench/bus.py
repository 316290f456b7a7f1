"""Benchmark of a realm's bus: N agent clients exchange M messages on a real Synapse.

Each agent is a matrix-nio client on the homeserver's Unix socket, with its own
token, syncing the Commons. Measured per message: delivery latency (send start →
another client sees it in its sync), mirroring lag (send start → the row is in the
Chronicle), throughput, lost and duplicated counts. The last line is one JSON
object.

    uv run python bench/bus.py [--agents 20] [--messages 2000] [--rate 60]

Runs in a throw-away BEARPIT_HOME unless one is given in the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("BEARPIT_HOME", tempfile.mkdtemp(prefix="bearpit-bench-"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")

import django

django.setup()

import aiohttp  # noqa: E402
import httpx  # noqa: E402
import nio  # noqa: E402
from django.core.management import call_command  # noqa: E402

from bearpit.env import parse_database_url  # noqa: E402
from chronicle.models import Message  # noqa: E402
from realms.herald.bus import BusAgent, agent_credentials, provision_bus  # noqa: E402
from realms.herald.config import HomeserverConfig, load_registration  # noqa: E402
from realms.herald.homeserver import free_port, start_homeserver  # noqa: E402
from realms.herald.matrix import UDS_HEADERS  # noqa: E402


class PlatformProcess:
    """The ASGI app in its own process, as production serves it (no shared GIL)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "bearpit.asgi:application",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--lifespan",
                "off",
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            cwd=Path(__file__).resolve().parent.parent,
        )

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=15)


def start_platform(port: int) -> PlatformProcess:
    platform = PlatformProcess(port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return platform
        except httpx.HTTPError:
            time.sleep(0.2)
    platform.stop()
    raise RuntimeError("the platform server did not start")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


# A timeline limit well above one sync's worth of messages: with the default (10) a
# busy room gives "limited" syncs that skip events.
SYNC_FILTER = {
    "room": {
        "timeline": {"limit": 500},
        "state": {"lazy_load_members": True},
        "ephemeral": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
    },
    "presence": {"not_types": ["*"]},
    "account_data": {"not_types": ["*"]},
}


class MirrorWatcher(threading.Thread):
    """Polls the Chronicle and notes when each event id first appears."""

    def __init__(self, realm_id: str) -> None:
        super().__init__(daemon=True)
        self.realm_id = realm_id
        self.seen: dict[str, float] = {}
        self.stop_event = threading.Event()

    def run(self) -> None:
        last = 0
        while not self.stop_event.is_set():
            rows = list(
                Message.objects.filter(realm_id=self.realm_id, id__gt=last)
                .order_by("id")
                .values_list("id", "matrix_event_id")
            )
            now = time.monotonic()
            for row_id, event_id in rows:
                last = max(last, row_id)
                self.seen.setdefault(event_id, now)
            time.sleep(0.01)


async def run_bench(
    room: str,
    creds: dict[str, tuple[str, str]],
    messages: int,
    rate: float,
    socket_path: Path,
    watcher: MirrorWatcher,
) -> dict[str, Any]:
    agents = len(creds)
    clients: dict[str, nio.AsyncClient] = {}
    for agent_id, (mxid, token) in creds.items():
        client = nio.AsyncClient("http://homeserver", mxid)
        client.client_session = aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=str(socket_path)), headers=UDS_HEADERS
        )
        client.access_token = token
        client.user_id = mxid
        clients[agent_id] = client

    seen: dict[str, dict[str, float]] = defaultdict(dict)  # event id → agent → time
    seen_counts: Counter[tuple[str, str]] = Counter()
    sent_at: dict[str, float] = {}
    acked_at: dict[str, float] = {}
    failures = 0
    stop = asyncio.Event()

    async def listen(agent_id: str, client: nio.AsyncClient) -> None:
        first = await client.sync(timeout=0, full_state=False, sync_filter=SYNC_FILTER)
        if isinstance(first, nio.SyncError):
            raise RuntimeError(f"{agent_id}: sync failed: {first}")
        while not stop.is_set():
            response = await client.sync(timeout=1000, sync_filter=SYNC_FILTER)
            if isinstance(response, nio.SyncError):
                continue
            now = time.monotonic()
            joined = response.rooms.join.get(room)
            if joined is None:
                continue
            for event in joined.timeline.events:
                if isinstance(event, nio.RoomMessageText) and event.sender != client.user_id:
                    seen[event.event_id].setdefault(agent_id, now)
                    seen_counts[(event.event_id, agent_id)] += 1

    listeners = [asyncio.create_task(listen(a, c)) for a, c in clients.items()]
    await asyncio.sleep(1.0)

    per_agent = messages // agents
    interval = agents / rate if rate > 0 else 0.0

    async def talk(index: int, agent_id: str, client: nio.AsyncClient) -> None:
        nonlocal failures
        await asyncio.sleep(interval * index / agents)
        for seq in range(per_agent):
            started = time.monotonic()
            response = await client.room_send(
                room, "m.room.message", {"msgtype": "m.text", "body": f"{agent_id} #{seq}"}
            )
            if isinstance(response, nio.RoomSendResponse):
                sent_at[response.event_id] = started
                acked_at[response.event_id] = time.monotonic()
            else:
                failures += 1
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - started)))

    started = time.monotonic()
    await asyncio.gather(*(talk(i, a, c) for i, (a, c) in enumerate(clients.items())))
    sending = time.monotonic() - started
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        complete = all(len(seen.get(e, {})) >= agents - 1 for e in sent_at)
        if complete and set(sent_at) <= set(watcher.seen):
            break
        await asyncio.sleep(0.1)
    stop.set()
    await asyncio.gather(*listeners, return_exceptions=True)
    for client in clients.values():
        await client.close()
    return {
        "agents": agents,
        "sent_at": sent_at,
        "acked_at": acked_at,
        "seen": seen,
        "seen_counts": seen_counts,
        "failures": failures,
        "sending_s": sending,
    }


def probe_endpoint(port: int, room: str, sender: str, count: int = 200) -> dict[str, float]:
    """Our side alone: transactions as the homeserver sends them, timed to the 200."""
    hs_token = load_registration().hs_token
    times = []
    with httpx.Client(headers={"Authorization": f"Bearer {hs_token}"}) as client:
        for i in range(count):
            event = {
                "type": "m.room.message",
                "event_id": f"$probe-{secrets.token_hex(8)}",
                "room_id": room,
                "sender": sender,
                "origin_server_ts": int(time.time() * 1000),
                "content": {"msgtype": "m.text", "body": f"probe {i}"},
            }
            started = time.monotonic()
            response = client.put(
                f"http://127.0.0.1:{port}/_matrix/app/v1/transactions/probe{i}",
                json={"events": [event]},
            )
            response.raise_for_status()
            times.append((time.monotonic() - started) * 1000)
    return {
        "endpoint_p50_ms": round(pct(times, 50), 1),
        "endpoint_p99_ms": round(pct(times, 99), 1),
    }


def summarise(realm: str, raw: dict[str, Any], mirrored_at: dict[str, float]) -> dict[str, Any]:
    agents, sent_at, acked_at = raw["agents"], raw["sent_at"], raw["acked_at"]
    seen, seen_counts, failures = raw["seen"], raw["seen_counts"], raw["failures"]
    delivery = [(t - sent_at[e]) * 1000 for e in sent_at for t in seen.get(e, {}).values()]
    mirror = [(mirrored_at[e] - sent_at[e]) * 1000 for e in sent_at if e in mirrored_at]
    after_ack = [(mirrored_at[e] - acked_at[e]) * 1000 for e in sent_at if e in mirrored_at]
    send_ms = [(acked_at[e] - sent_at[e]) * 1000 for e in sent_at]
    chronicle = Counter(
        Message.objects.filter(realm_id=realm).values_list("matrix_event_id", flat=True)
    )
    undelivered = sum(1 for e in sent_at if len(seen.get(e, {})) < agents - 1)
    unmirrored = sum(1 for e in sent_at if chronicle[e] == 0)
    duplicated = sum(n - 1 for n in chronicle.values() if n > 1) + sum(
        n - 1 for n in seen_counts.values() if n > 1
    )
    return {
        "agents": agents,
        "messages": len(sent_at),
        "send_failures": failures,
        "lost": unmirrored + undelivered + failures,
        "lost_mirror": unmirrored,
        "lost_delivery": undelivered,
        "duplicated": duplicated,
        "throughput_msg_s": round(len(sent_at) / raw["sending_s"], 1),
        "send_p50_ms": round(pct(send_ms, 50), 1),
        "send_p99_ms": round(pct(send_ms, 99), 1),
        "delivery_p50_ms": round(pct(delivery, 50), 1),
        "delivery_p99_ms": round(pct(delivery, 99), 1),
        "mirror_lag_p50_ms": round(pct(mirror, 50), 1),
        "mirror_lag_p99_ms": round(pct(mirror, 99), 1),
        "mirror_after_ack_p99_ms": round(pct(after_ack, 99), 1),
        "mirror_lag_mean_ms": round(statistics.fmean(mirror), 1) if mirror else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument(
        "--rate",
        type=float,
        default=20.0,
        help="target messages per second, all agents together (0 = flat out)",
    )
    parser.add_argument(
        "--synapse-postgres",
        metavar="URL",
        help="run Synapse on PostgreSQL (postgres://user@host:port/db; Synapse gets <db>_synapse)",
    )
    args = parser.parse_args()

    call_command("migrate", verbosity=0)
    platform = start_platform(free_port())
    database = (
        parse_database_url("--synapse-postgres", args.synapse_postgres)
        if args.synapse_postgres
        else None
    )
    config = HomeserverConfig.from_settings(
        port=free_port(), platform_port=platform.port, database=database
    )
    homeserver = start_homeserver(config)
    try:
        realm = f"bench-{secrets.token_hex(3)}"
        bus = provision_bus(
            realm,
            [BusAgent(f"a{i:02d}") for i in range(args.agents)],
            turns=False,
            allow_side_channels=False,
        )
        creds = {}
        for agent_id in bus.users:
            found = agent_credentials(realm, agent_id)
            creds[agent_id] = (found.mxid, found.access_token)
        watcher = MirrorWatcher(realm)
        watcher.start()
        try:
            raw = asyncio.run(
                run_bench(
                    bus.commons_room_id,
                    creds,
                    args.messages,
                    args.rate,
                    config.socket_path,
                    watcher,
                )
            )
        finally:
            watcher.stop_event.set()
            watcher.join()
        result = summarise(realm, raw, watcher.seen)
        first_agent = next(iter(creds.values()))[0]
        result |= probe_endpoint(platform.port, bus.commons_room_id, first_agent)
    finally:
        homeserver.stop()
        platform.stop()
    print(f"agents {result['agents']}, messages {result['messages']}")
    print(f"throughput {result['throughput_msg_s']} msg/s")
    print(f"send (ack) p50 {result['send_p50_ms']} ms, p99 {result['send_p99_ms']} ms")
    print(f"delivery p50 {result['delivery_p50_ms']} ms, p99 {result['delivery_p99_ms']} ms")
    print(f"mirror lag p50 {result['mirror_lag_p50_ms']} ms, p99 {result['mirror_lag_p99_ms']} ms")
    print(
        f"our endpoint alone (one-event transactions): p50 {result['endpoint_p50_ms']} ms, "
        f"p99 {result['endpoint_p99_ms']} ms"
    )
    print(f"lost {result['lost']}, duplicated {result['duplicated']}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
