"""Benchmark of a realm's bus: N agent clients exchange M messages on a real Synapse.

Each agent is the runtime's own Matrix bus (``runtime.matrix_bus.MatrixBus``: its
client on the homeserver's Unix socket, its sync filter, its long-poll loop), with its
own token, syncing its rooms. Two phases, each counting lost and duplicated messages:

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
of 20 clients wakes up for every message (about a third of a core of homeserver CPU).
Flat out, each sync wake-up carries many messages, so a message costs the homeserver
far less than when they arrive one at a time: the saturation phase completes several
times the paced rate. A rate at or above what the homeserver sustains only measures
how long the queue has grown by the end of the run.

Mirroring times are noted by a separate process polling the Chronicle every 5 ms
(CLOCK_MONOTONIC is shared between processes), so the clients' event loop cannot
delay them. The last line is one JSON object.

    uv run --group bench python bench/bus.py [--agents 20] [--messages 2000] [--rate 4]
                               [--saturation-messages 400]

Runs in a throw-away BEARPIT_HOME, removed at the end, unless one is given in the
environment.
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
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.home import throwaway_home

throwaway_home()
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bearpit.settings")

import django  # noqa: E402

django.setup()

import httpx  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connections  # noqa: E402

from bearpit.env import parse_database_url  # noqa: E402
from chronicle.models import Message  # noqa: E402
from realms.herald.bus import BusAgent, agent_credentials, provision_bus  # noqa: E402
from realms.herald.config import HomeserverConfig, load_registration  # noqa: E402
from realms.herald.homeserver import free_port, start_homeserver  # noqa: E402
from runtime.birth import BusSettings  # noqa: E402
from runtime.bus import BusMessage  # noqa: E402
from runtime.matrix_bus import MatrixBus  # noqa: E402
from runtime.matrix_http import MatrixError, new_txn_id  # noqa: E402
from runtime.trace import Redactor, TraceWriter  # noqa: E402

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


# The runtime's own filter (runtime/matrix_bus.py) is what the clients sync with. The two
# below are kept to measure the difference (--filter): "lean" is the runtime's without lazy
# loading of members and with a larger timeline, "wide" the broader filter used before.
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
FILTERS: dict[str, dict[str, Any] | None] = {
    "runtime": None,
    "lean": LEAN_FILTER,
    "wide": WIDE_FILTER,
}


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
    syncs: int = 0  # sync answers the clients got during the phase
    cpu_s: dict[str, float] = field(default_factory=dict)  # process → CPU seconds used
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)


def cpu_seconds(pid: int) -> float:
    """User and system CPU time a process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Agent:
    agent_id: str
    mxid: str
    token: str


class Bench:
    """Every agent is the runtime's own Matrix bus (runtime/matrix_bus.py): its client, its
    sync filter, its long-poll loop, its since-token file; only the trace goes nowhere."""

    def __init__(
        self,
        room: str,
        agents: list[Agent],
        socket_path: Path,
        watcher: MirrorWatcher,
        state_root: Path,
        processes: dict[str, int],
        sync_filter: dict[str, Any] | None = None,
    ) -> None:
        self.room = room
        self.watcher = watcher
        self.processes = processes  # name → pid, whose CPU time each phase reports
        self.syncs = 0
        self._counted: tuple[int, dict[str, float]] = (0, {})
        self.buses: dict[str, MatrixBus] = {}
        peers = {a.agent_id: a.mxid for a in agents}
        for agent in agents:
            settings = BusSettings(
                socket_path=str(socket_path),
                mxid=agent.mxid,
                access_token=agent.token,
                commons_room_id=room,
                peers=peers,
                require_mention=False,  # every agent reads every Commons message
            )
            state = state_root / agent.agent_id
            state.mkdir(parents=True, exist_ok=True)
            trace = TraceWriter(state / "trace.jsonl", "bench", agent.agent_id, Redactor([]))
            bus = MatrixBus(settings, agent.agent_id, state, trace)
            self._count_syncs(bus, sync_filter)
            self.buses[agent.agent_id] = bus
        self.seen: dict[str, dict[str, float]] = defaultdict(dict)  # event → agent → time
        self.seen_counts: Counter[tuple[str, str]] = Counter()

    def _count_syncs(self, bus: MatrixBus, instead: dict[str, Any] | None) -> None:
        """Count the bus's sync answers; with ``instead``, sync with that filter."""
        inner = bus.client.sync

        async def sync(
            sync_filter: dict[str, Any], since: str | None, timeout_ms: int
        ) -> dict[str, Any]:
            answer = await inner(instead or sync_filter, since, timeout_ms)
            self.syncs += 1
            return answer

        bus.client.sync = sync  # type: ignore[method-assign]

    def _count_from(self) -> None:
        self._counted = (self.syncs, {n: cpu_seconds(p) for n, p in self.processes.items()})

    def _count_to(self, phase: Phase) -> None:
        syncs, cpu = self._counted
        phase.syncs = self.syncs - syncs
        phase.cpu_s = {n: cpu_seconds(p) - cpu[n] for n, p in self.processes.items()}

    @property
    def agents(self) -> int:
        return len(self.buses)

    def _deliver(self, agent_id: str) -> Callable[[BusMessage], None]:
        def deliver(message: BusMessage) -> None:
            if message.room_id == self.room:
                now = time.monotonic()
                self.seen[message.event_id].setdefault(agent_id, now)
                self.seen_counts[(message.event_id, agent_id)] += 1

        return deliver

    async def start(self) -> None:
        for agent_id, bus in self.buses.items():
            await bus.start(self._deliver(agent_id))
        await asyncio.wait_for(
            asyncio.gather(*(bus.wait_connected() for bus in self.buses.values())), 60
        )

    async def close(self) -> None:
        await asyncio.gather(*(bus.close() for bus in self.buses.values()))

    async def _send(self, phase: Phase, agent_id: str, text: str, intended: float) -> None:
        """One post, as ``MatrixBus.send`` makes it, keeping the event id it is given."""
        phase.attempted += 1
        content = {"msgtype": "m.text", "body": text, "m.mentions": {"user_ids": []}}
        try:
            event_id = await self.buses[agent_id].client.send(
                self.room, "m.room.message", content, new_txn_id()
            )
        except MatrixError:
            phase.failures += 1  # counted as lost, like a refused send
            return
        if event_id:
            phase.intended[event_id] = intended
            phase.acked[event_id] = time.monotonic()
        else:
            phase.failures += 1

    async def paced(self, messages: int, rate: float) -> Phase:
        """Open loop: message i starts at start + i / rate, sent by agent i mod N."""
        phase = Phase("paced", load_before=os.getloadavg())
        agents = list(self.buses)
        sends = []
        self._count_from()
        phase.started = time.monotonic()
        for i in range(messages):
            due = phase.started + i / rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            agent_id = agents[i % len(agents)]
            sends.append(asyncio.create_task(self._send(phase, agent_id, f"{agent_id} p{i}", due)))
        await asyncio.gather(*sends)
        phase.sending_s = time.monotonic() - phase.started
        await self._drain(phase)
        self._count_to(phase)
        phase.load_after = os.getloadavg()
        return phase

    async def saturate(self, messages: int) -> Phase:
        """Closed loop, flat out: each agent sends again as soon as it is acknowledged."""
        phase = Phase("saturation", load_before=os.getloadavg())
        per_agent = max(1, messages // self.agents)

        async def talk(agent_id: str) -> None:
            for seq in range(per_agent):
                await self._send(phase, agent_id, f"{agent_id} s{seq}", time.monotonic())

        self._count_from()
        phase.started = time.monotonic()
        await asyncio.gather(*(talk(a) for a in self.buses))
        phase.sending_s = time.monotonic() - phase.started
        await self._drain(phase)
        self._count_to(phase)
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
        # How many sync long-polls each message woke, over all clients (at most one per
        # client when every message wakes every client on its own).
        "syncs_per_message": round(phase.syncs / max(1, phase.attempted), 2),
        # CPU time per message of each process, from the first send to the end of the drain:
        # unlike latencies, barely moved by what else the machine runs.
        **{
            f"{name}_cpu_ms_per_message": round(1000 * cpu / max(1, phase.attempted), 2)
            for name, cpu in phase.cpu_s.items()
        },
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
    bench = make_bench()  # the clients' connections belong to the running loop
    await bench.start()
    try:
        paced = await bench.paced(messages, rate)
        saturation = await bench.saturate(saturation_messages) if saturation_messages else None
    finally:
        await bench.close()
    return bench, paced, saturation


def report(args: argparse.Namespace, paced: dict[str, Any], sat: dict[str, Any] | None) -> None:
    print(f"agents {args.agents}, sync filter {args.filter}")
    print(f"paced: {paced['messages']} messages offered at {args.rate} msg/s")
    print(f"  throughput {paced['throughput_msgs_per_s']} msg/s")
    print(f"  send (ack) p50 {paced['send_p50_ms']} ms, p99 {paced['send_p99_ms']} ms")
    print(f"  delivery p50 {paced['delivery_p50_ms']} ms, p99 {paced['delivery_p99_ms']} ms")
    print(f"  mirror lag p50 {paced['mirror_lag_p50_ms']} ms, p99 {paced['mirror_lag_p99_ms']} ms")
    print(f"  sync wake-ups per message {paced['syncs_per_message']}")
    print(f"  homeserver CPU per message {paced['homeserver_cpu_ms_per_message']} ms")
    print(f"  lost {paced['lost']}, duplicated {paced['duplicated']}")
    print(f"  load average (1 min) before/after {paced['load_avg_1m']}")
    if sat is not None:
        print(f"saturation: {sat['messages']} messages flat out")
        print(f"  completed throughput {sat['throughput_msgs_per_s']} msg/s")
        print(f"  delivery p50 {sat['delivery_p50_ms']} ms, p99 {sat['delivery_p99_ms']} ms")
        print(f"  sync wake-ups per message {sat['syncs_per_message']}")
        print(f"  homeserver CPU per message {sat['homeserver_cpu_ms_per_message']} ms")
        print(f"  lost {sat['lost']}, duplicated {sat['duplicated']}")
        print(f"  load average (1 min) before/after {sat['load_avg_1m']}")


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
    parser.add_argument(
        "--filter",
        choices=sorted(FILTERS),
        default="runtime",
        help="sync filter: the runtime's own (default), or another one to compare with",
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
        agents = []
        for agent_id in bus.users:
            found = agent_credentials(realm, agent_id)
            agents.append(Agent(agent_id, found.mxid, found.access_token))
        watcher = MirrorWatcher(realm)
        try:
            bench, paced_phase, sat_phase = asyncio.run(
                run_phases(
                    lambda: Bench(
                        bus.commons_room_id,
                        agents,
                        config.socket_path,
                        watcher,
                        config.home / "agents",
                        {
                            "homeserver": homeserver.pid,
                            "platform": platform.process.pid,
                            "clients": os.getpid(),
                        },
                        FILTERS[args.filter],
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
            probe = probe_endpoint(platform.port, bus.commons_room_id, agents[0].mxid)
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
