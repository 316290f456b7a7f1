"""Benchmark of a realm's bus: N agent clients exchange M messages on a real Synapse.

Each agent is a matrix-nio client on the homeserver's Unix socket, with its own
token, syncing its rooms. Two phases, each counting lost and duplicated messages:

* **paced** — ``--messages`` sent open-loop at ``--rate`` messages/s (all agents
  together, round-robin). Each send starts at its scheduled instant whether or not
  earlier sends have finished, and every latency is measured from that scheduled
  instant, so a slow homeserver cannot hide its backlog by slowing the sender down
  (no coordinated omission). Measured per message: delivery latency (→ each other
  client sees it in its sync) and mirroring lag (→ the row is in the Chronicle).
  No sample is dropped: a message that never arrives within the drain window counts
  as lost.
* **saturation** — ``--saturation-messages`` sent flat out (every agent sends its
  next message as soon as the previous one is acknowledged); the result is the
  completed throughput: messages delivered to every other client *and* mirrored,
  divided by the time from the first send to the last completion.

The default rate, 4 msg/s, is what a 2-core machine carries with headroom when each
of 20 clients wakes up for every message: there the acknowledgement of a send takes
p50 ~60 ms, the path's own cost. At 8 msg/s the same machine already queues (sends
acknowledged after ~0.5 s) although the saturation phase completes 17-23 msg/s:
flat out, each sync wake-up carries several messages, so a message costs the
homeserver less than when they arrive one at a time. A rate at or above what the
homeserver sustains only measures how long the queue has grown by the end of the run.

Mirroring times are noted by a separate process polling the Chronicle every 5 ms
(CLOCK_MONOTONIC is shared between processes), so the clients' event loop cannot
delay them. The last line is one JSON object.

    uv run --group bench python bench/bus.py [--agents 20] [--messages 2000] [--rate 4]
                               [--saturation-messages 400]

Runs in a throw-away BEARPIT_HOME unless one is given in the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
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
from django.db import connections  # noqa: E402

from bearpit.env import parse_database_url  # noqa: E402
from chronicle.models import Message  # noqa: E402
from realms.herald.bus import BusAgent, agent_credentials, provision_bus  # noqa: E402
from realms.herald.config import HomeserverConfig, load_registration  # noqa: E402
from realms.herald.homeserver import free_port, start_homeserver  # noqa: E402
from realms.herald.matrix import UDS_HEADERS  # noqa: E402

DRAIN_S = 30.0


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
# busy room gives "limited" syncs that skip events. Only messages, no room state, no
# ephemeral events: what an agent reads, and the least work for the homeserver.
LEAN_FILTER = {
    "room": {
        "timeline": {"limit": 500, "types": ["m.room.message"]},
        "state": {"types": []},
        "ephemeral": {"types": []},
        "account_data": {"types": []},
    },
    "presence": {"types": []},
    "account_data": {"types": []},
}
# The filter the benchmark used before, kept to measure the difference.
WIDE_FILTER = {
    "room": {
        "timeline": {"limit": 500},
        "state": {"lazy_load_members": True},
        "ephemeral": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
    },
    "presence": {"not_types": ["*"]},
    "account_data": {"not_types": ["*"]},
}
FILTERS = {"lean": LEAN_FILTER, "wide": WIDE_FILTER}


def _watch(realm_id: str, out: Connection, stop: Any) -> None:
    """In the watcher process: send ``(event id, first seen)`` batches as rows appear."""
    connections.close_all()  # never share the parent's connection across fork
    last = 0
    while not stop.is_set():
        rows = list(
            Message.objects.filter(realm_id=realm_id, id__gt=last)
            .order_by("id")
            .values_list("id", "matrix_event_id")
        )
        now = time.monotonic()
        if rows:
            last = rows[-1][0]
            out.send([(event_id, now) for _, event_id in rows])
        time.sleep(0.005)
    out.send(None)


class MirrorWatcher:
    """Notes when each event id first appears in the Chronicle, from another process."""

    def __init__(self, realm_id: str) -> None:
        self.seen: dict[str, float] = {}
        connections.close_all()
        context = multiprocessing.get_context("fork")
        self._stop = context.Event()
        receiver, sender = context.Pipe(duplex=False)
        self._receiver = receiver
        self._process = context.Process(target=_watch, args=(realm_id, sender, self._stop))
        self._process.start()
        sender.close()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            batch = self._receiver.recv()
            if batch is None:
                return
            for event_id, at in batch:
                self.seen.setdefault(event_id, at)

    def stop(self) -> None:
        self._stop.set()
        self._reader.join(timeout=10)
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()


@dataclass
class Phase:
    name: str
    intended: dict[str, float] = field(default_factory=dict)  # event id → scheduled send
    acked: dict[str, float] = field(default_factory=dict)
    attempted: int = 0
    failures: int = 0
    started: float = 0.0
    sending_s: float = 0.0
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


class Bench:
    def __init__(
        self,
        room: str,
        creds: dict[str, tuple[str, str]],
        socket_path: Path,
        watcher: MirrorWatcher,
        sync_filter: dict[str, Any],
        sync_pause: float = 0.0,
    ) -> None:
        self.room = room
        self.sync_pause = sync_pause
        self.watcher = watcher
        self.sync_filter = sync_filter
        self.clients: dict[str, nio.AsyncClient] = {}
        for agent_id, (mxid, token) in creds.items():
            client = nio.AsyncClient("http://homeserver", mxid)
            client.client_session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=str(socket_path)), headers=UDS_HEADERS
            )
            client.access_token = token
            client.user_id = mxid
            self.clients[agent_id] = client
        self.seen: dict[str, dict[str, float]] = defaultdict(dict)  # event → agent → time
        self.seen_counts: Counter[tuple[str, str]] = Counter()
        self._stop = asyncio.Event()
        self._listeners: list[asyncio.Task[None]] = []

    @property
    def agents(self) -> int:
        return len(self.clients)

    async def _listen(self, agent_id: str, client: nio.AsyncClient) -> None:
        first = await client.sync(timeout=0, full_state=False, sync_filter=self.sync_filter)
        if isinstance(first, nio.SyncError):
            raise RuntimeError(f"{agent_id}: sync failed: {first}")
        while not self._stop.is_set():
            response = await client.sync(timeout=1000, sync_filter=self.sync_filter)
            if isinstance(response, nio.SyncError):
                continue
            now = time.monotonic()
            joined = response.rooms.join.get(self.room)
            if joined is None:
                continue
            for event in joined.timeline.events:
                if isinstance(event, nio.RoomMessageText) and event.sender != client.user_id:
                    self.seen[event.event_id].setdefault(agent_id, now)
                    self.seen_counts[(event.event_id, agent_id)] += 1
            if self.sync_pause:
                # Let a few messages gather: one wake-up per message per client is most
                # of the homeserver's work (docs/bus.md, "Measuring").
                await asyncio.sleep(self.sync_pause)

    async def start(self) -> None:
        self._listeners = [asyncio.create_task(self._listen(a, c)) for a, c in self.clients.items()]
        await asyncio.sleep(1.0)

    async def close(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._listeners, return_exceptions=True)
        for client in self.clients.values():
            await client.close()

    async def _send(self, phase: Phase, agent_id: str, text: str, intended: float) -> None:
        phase.attempted += 1
        try:
            response = await self.clients[agent_id].room_send(
                self.room, "m.room.message", {"msgtype": "m.text", "body": text}
            )
        except (aiohttp.ClientError, OSError, TimeoutError):
            phase.failures += 1  # counted as lost, like a refused send
            return
        if isinstance(response, nio.RoomSendResponse):
            phase.intended[response.event_id] = intended
            phase.acked[response.event_id] = time.monotonic()
        else:
            phase.failures += 1

    async def paced(self, messages: int, rate: float) -> Phase:
        """Open loop: message i starts at start + i / rate, sent by agent i mod N."""
        phase = Phase("paced", load_before=os.getloadavg())
        agents = list(self.clients)
        sends = []
        phase.started = time.monotonic()
        for i in range(messages):
            due = phase.started + i / rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            agent_id = agents[i % len(agents)]
            sends.append(asyncio.create_task(self._send(phase, agent_id, f"{agent_id} p{i}", due)))
        await asyncio.gather(*sends)
        phase.sending_s = time.monotonic() - phase.started
        await self._drain(phase)
        phase.load_after = os.getloadavg()
        return phase

    async def saturate(self, messages: int) -> Phase:
        """Closed loop, flat out: each agent sends again as soon as it is acknowledged."""
        phase = Phase("saturation", load_before=os.getloadavg())
        per_agent = max(1, messages // self.agents)

        async def talk(agent_id: str) -> None:
            for seq in range(per_agent):
                await self._send(phase, agent_id, f"{agent_id} s{seq}", time.monotonic())

        phase.started = time.monotonic()
        await asyncio.gather(*(talk(a) for a in self.clients))
        phase.sending_s = time.monotonic() - phase.started
        await self._drain(phase)
        phase.load_after = os.getloadavg()
        return phase

    def complete(self, event_id: str) -> bool:
        return len(self.seen.get(event_id, {})) >= self.agents - 1 and event_id in self.watcher.seen

    async def _drain(self, phase: Phase) -> None:
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            if all(self.complete(e) for e in list(phase.intended)):
                return
            await asyncio.sleep(0.05)


def summarise(bench: Bench, phase: Phase) -> dict[str, Any]:
    sent, acked, mirrored = phase.intended, phase.acked, bench.watcher.seen
    seen, expected = bench.seen, bench.agents - 1
    delivery = [(t - sent[e]) * 1000 for e in sent for t in seen.get(e, {}).values()]
    mirror = [(mirrored[e] - sent[e]) * 1000 for e in sent if e in mirrored]
    after_ack = [(mirrored[e] - acked[e]) * 1000 for e in sent if e in mirrored]
    send_ms = [(acked[e] - sent[e]) * 1000 for e in sent]
    chronicle = Counter(
        Message.objects.filter(matrix_event_id__in=list(sent)).values_list(
            "matrix_event_id", flat=True
        )
    )
    undelivered = sum(1 for e in sent if len(seen.get(e, {})) < expected)
    unmirrored = sum(1 for e in sent if chronicle[e] == 0)
    duplicated = sum(n - 1 for n in chronicle.values() if n > 1) + sum(
        n - 1 for (e, _), n in bench.seen_counts.items() if n > 1 and e in sent
    )
    completions = [max([mirrored[e], *seen[e].values()]) for e in sent if bench.complete(e)]
    span = (max(completions) - phase.started) if completions else float("nan")
    return {
        "messages": phase.attempted,
        "send_failures": phase.failures,
        "lost": unmirrored + undelivered + phase.failures,
        "lost_mirror": unmirrored,
        "lost_delivery": undelivered,
        "duplicated": duplicated,
        "throughput_msgs_per_s": round(len(completions) / span, 2),
        "send_rate_msgs_per_s": round(phase.attempted / phase.sending_s, 2),
        "send_p50_ms": round(pct(send_ms, 50), 1),
        "send_p99_ms": round(pct(send_ms, 99), 1),
        "delivery_p50_ms": round(pct(delivery, 50), 1),
        "delivery_p99_ms": round(pct(delivery, 99), 1),
        "delivery_max_ms": round(max(delivery, default=float("nan")), 1),
        "mirror_lag_p50_ms": round(pct(mirror, 50), 1),
        "mirror_lag_p99_ms": round(pct(mirror, 99), 1),
        "mirror_lag_max_ms": round(max(mirror, default=float("nan")), 1),
        "mirror_after_ack_p50_ms": round(pct(after_ack, 50), 1),
        "mirror_after_ack_p99_ms": round(pct(after_ack, 99), 1),
        "load_avg_1m": [round(phase.load_before[0], 2), round(phase.load_after[0], 2)],
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


async def run_phases(
    make_bench: Callable[[], Bench], messages: int, rate: float, saturation_messages: int
) -> tuple[Bench, Phase, Phase | None]:
    bench = make_bench()  # aiohttp sessions belong to the running loop
    await bench.start()
    try:
        paced = await bench.paced(messages, rate)
        saturation = await bench.saturate(saturation_messages) if saturation_messages else None
    finally:
        await bench.close()
    return bench, paced, saturation


def report(args: argparse.Namespace, paced: dict[str, Any], sat: dict[str, Any] | None) -> None:
    print(f"agents {args.agents}, sync filter {args.filter}, sync pause {args.sync_pause} ms")
    print(f"paced: {paced['messages']} messages offered at {args.rate} msg/s")
    print(f"  throughput {paced['throughput_msgs_per_s']} msg/s")
    print(f"  send (ack) p50 {paced['send_p50_ms']} ms, p99 {paced['send_p99_ms']} ms")
    print(f"  delivery p50 {paced['delivery_p50_ms']} ms, p99 {paced['delivery_p99_ms']} ms")
    print(f"  mirror lag p50 {paced['mirror_lag_p50_ms']} ms, p99 {paced['mirror_lag_p99_ms']} ms")
    print(f"  lost {paced['lost']}, duplicated {paced['duplicated']}")
    print(f"  load average (1 min) before/after {paced['load_avg_1m']}")
    if sat is not None:
        print(f"saturation: {sat['messages']} messages flat out")
        print(f"  completed throughput {sat['throughput_msgs_per_s']} msg/s")
        print(f"  delivery p50 {sat['delivery_p50_ms']} ms, p99 {sat['delivery_p99_ms']} ms")
        print(f"  lost {sat['lost']}, duplicated {sat['duplicated']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--messages", type=int, default=2000, help="messages in the paced phase")
    parser.add_argument(
        "--rate",
        type=float,
        default=4.0,
        help="offered load of the paced phase, messages per second, all agents together",
    )
    parser.add_argument(
        "--saturation-messages",
        type=int,
        default=400,
        help="messages in the flat-out phase (0 skips it)",
    )
    parser.add_argument("--filter", choices=sorted(FILTERS), default="lean")
    parser.add_argument(
        "--sync-pause",
        type=float,
        default=0.0,
        metavar="MS",
        help="clients wait this long after each sync before the next one (batches wake-ups)",
    )
    parser.add_argument("--no-probe", action="store_true", help="skip timing our endpoint alone")
    parser.add_argument(
        "--synapse-postgres",
        metavar="URL",
        help="run Synapse on PostgreSQL (postgres://user@host:port/db; Synapse gets <db>_synapse)",
    )
    args = parser.parse_args()
    if args.rate <= 0:
        parser.error("--rate must be positive; the saturation phase measures flat out")

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
        try:
            sync_filter = FILTERS[args.filter]
            bench, paced_phase, sat_phase = asyncio.run(
                run_phases(
                    lambda: Bench(
                        bus.commons_room_id,
                        creds,
                        config.socket_path,
                        watcher,
                        sync_filter,
                        args.sync_pause / 1000,
                    ),
                    args.messages,
                    args.rate,
                    args.saturation_messages,
                )
            )
            paced = summarise(bench, paced_phase)
            sat = summarise(bench, sat_phase) if sat_phase is not None else None
        finally:
            watcher.stop()
        probe: dict[str, float] = {}
        if not args.no_probe:
            first_agent = next(iter(creds.values()))[0]
            probe = probe_endpoint(platform.port, bus.commons_room_id, first_agent)
    finally:
        homeserver.stop()
        platform.stop()
    report(args, paced, sat)
    if probe:
        print(
            f"our endpoint alone (one-event transactions): p50 {probe['endpoint_p50_ms']} ms, "
            f"p99 {probe['endpoint_p99_ms']} ms"
        )
    result = {
        "agents": args.agents,
        "messages": paced["messages"],
        "offered_rate": args.rate,
        "sync_filter": args.filter,
        "sync_pause_ms": args.sync_pause,
        "lost": paced["lost"] + (sat["lost"] if sat else 0),
        "duplicated": paced["duplicated"] + (sat["duplicated"] if sat else 0),
        "mirror_lag_p50_ms": paced["mirror_lag_p50_ms"],
        "mirror_lag_p99_ms": paced["mirror_lag_p99_ms"],
        "delivery_p50_ms": paced["delivery_p50_ms"],
        "delivery_p99_ms": paced["delivery_p99_ms"],
        "throughput_msgs_per_s": paced["throughput_msgs_per_s"],
        "saturation_msgs_per_s": sat["throughput_msgs_per_s"] if sat else None,
        "paced": paced,
        "saturation": sat,
        **probe,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
