"""The event-driven driver: sleep until something happens, then run one turn about it.

Wake sources are bus messages, timers and notifications of finished work. Events that arrive
during a turn are handed to the loop at its next round boundary as one untrusted block. An idle
agent makes no model calls; a budget refusal makes it dormant (timers no longer wake it) until
the next bus event.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from datetime import UTC, datetime
from pathlib import Path

from runtime import __version__
from runtime.birth import BirthConfig
from runtime.bus import Bus, BusMessage, BusSendError
from runtime.filetools import file_tools
from runtime.hooks import Hooks
from runtime.loop import AgentLoop, Termination, TurnResult
from runtime.mcp_client import McpHub
from runtime.model import ModelClient
from runtime.prompt import IncomingEvent, envelope, system_prompt
from runtime.resume import replay
from runtime.skills import SOURCE as SKILLS_SOURCE
from runtime.skills import load_skill_tool
from runtime.tools import ToolRegistry
from runtime.trace import Redactor, TraceWriter, TranscriptWriter

STARTUP_MCP_WAIT_S = 10.0
# A wake gives MCP servers that are down this long to come back before the turn starts.
WAKE_MCP_WAIT_S = 5.0


def _clock(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _now_ms() -> int:
    return int(datetime.now(UTC).timestamp() * 1000)


class Agent:
    def __init__(self, config: BirthConfig, bus: Bus | None, hooks: Hooks | None = None) -> None:
        self.config = config
        self.bus = bus
        self.hooks = hooks or Hooks()
        redact = Redactor(config.secrets())
        self.trace = TraceWriter(Path(config.trace_path), config.run_id, config.agent_id, redact)
        self.transcript: TranscriptWriter | None = None
        self.registry = ToolRegistry(config.tools_allow, config.limits.tool_timeout_s)
        for tool in file_tools(Path(config.workspace)):
            self.registry.add_builtin(tool)
        skills_tool = load_skill_tool(config.skills)
        if skills_tool is not None:
            self.registry.replace_source(SKILLS_SOURCE, [skills_tool])
        self.hub = McpHub(config.mcp_servers, self.registry, self.trace)
        self.model = ModelClient(config.model, config.limits, self.trace)
        self.loop: AgentLoop | None = None
        self.dormant = False
        self.turns: list[TurnResult] = []
        self._queue: asyncio.Queue[IncomingEvent] = asyncio.Queue()
        self._reply_room: str | None = None
        self._background: list[asyncio.Task[None]] = []  # timers, the connected announcer
        self.idle = asyncio.Event()
        self._wake = asyncio.Event()
        self._created = time.monotonic()

    # -- wake sources --------------------------------------------------------------------

    def on_bus(self, message: BusMessage) -> None:
        self._enqueue(
            IncomingEvent(
                kind="message",
                sender=message.sender,
                room=message.room_label,
                room_id=message.room_id,
                body=message.body,
                time=_clock(message.ts_ms),
                event_id=message.event_id,
                ts_ms=message.ts_ms,
                floor_call=message.floor_call,
            )
        )

    def notify(self, kind: str, body: str, sender: str = "runtime") -> None:
        """Wake the agent for something other than a message (a timer, finished work)."""
        self._enqueue(IncomingEvent(kind, sender, "(none)", None, body, _clock(_now_ms())))

    def _enqueue(self, event: IncomingEvent) -> None:
        self._queue.put_nowait(event)
        self._wake.set()

    async def _timer(self, every_s: float, message: str) -> None:
        while True:
            await asyncio.sleep(every_s)
            self.notify("timer", message, sender="timer")

    # -- life ----------------------------------------------------------------------------

    async def setup(self) -> None:
        # The bus syncs in the background while the MCP sessions open: what arrives meanwhile
        # waits in the queue, and neither handshake waits for the other.
        if self.bus is not None:
            await self.bus.start(self.on_bus)
        unavailable = await self.hub.start(
            min([STARTUP_MCP_WAIT_S, *(s.connect_timeout_s for s in self.config.mcp_servers)])
        )
        prompt = system_prompt(self.config, self.registry.names(), unavailable)
        previous = replay(Path(self.config.transcript_path))
        self.transcript = TranscriptWriter(
            Path(self.config.transcript_path), Redactor(self.config.secrets())
        )
        self.loop = AgentLoop(
            self.config, self.model, self.registry, self.hooks, self.trace, self.transcript, prompt
        )
        resumed = self.loop.restore(previous)
        config_hash = hashlib.sha256(self.config.model_dump_json().encode()).hexdigest()[:16]
        self.trace.emit(
            "run_start",
            version=__version__,
            config_hash=config_hash,
            model=self.config.model.name,
            tools=self.registry.names(),
            unavailable_servers=unavailable,
            resumed_messages=resumed,
        )
        for timer in self.config.timers:
            self._background.append(asyncio.create_task(self._timer(timer.every_s, timer.message)))
        if self.bus is not None:
            self._background.append(asyncio.create_task(self._announce_connected(self.bus)))

    async def _announce_connected(self, bus: Bus) -> None:
        """Trace ``connected`` once the bus has synced (setup opened the MCP sessions
        before; any that are down are named)."""
        await bus.wait_connected()
        self.trace.emit(
            "connected",
            setup_ms=round((time.monotonic() - self._created) * 1000),
            mcp_down=[name for name, server in self.hub.servers.items() if server.state != "up"],
        )

    def _take_pending(self) -> list[IncomingEvent]:
        batch: list[IncomingEvent] = []
        while not self._queue.empty():
            event = self._queue.get_nowait()
            if event.kind == "timer" and self.dormant:
                continue
            batch.append(event)
        return batch

    def _aim_reply(self, batch: list[IncomingEvent], *, mid_turn: bool = False) -> None:
        """A turn answers where the floor was granted, else where its newest message was said.

        A floor call (the system's grant, cue or nudge in the Commons) wins over any
        message, however new: the post that passes the floor must land in the Commons, or
        the player is skipped. Otherwise the newest message by the bus's timestamp, not by
        arrival, since a sync can hand over another room's older backlog late. Messages
        drained mid-turn join the turn's context but move its reply only if one of them
        is a floor call: a DM must never carry the floor-passing post out of the Commons.
        """
        calls = [e for e in batch if e.floor_call and e.room_id is not None]
        candidates = calls or ([] if mid_turn else batch)
        newest: IncomingEvent | None = None
        for event in candidates:
            if event.room_id is not None and (newest is None or event.ts_ms >= newest.ts_ms):
                newest = event
        if newest is not None:
            self._reply_room = newest.room_id

    def _drain(self) -> str | None:
        batch = self._take_pending()
        if not batch:
            return None
        self.trace.emit("wake", source="during_turn", events=[e.event_id for e in batch])
        self._aim_reply(batch, mid_turn=True)
        return envelope(batch)

    async def run(self, stop: asyncio.Event) -> None:
        """Serve wakes until ``stop`` is set. One turn at a time, by construction."""
        reason = "stopped"
        try:
            await self.setup()
            assert self.loop is not None
            while not stop.is_set():
                if self._queue.empty():
                    self.idle.set()
                    await self._wait_for_wake(stop)
                    continue
                # Taking the batch and leaving the idle state happen in one step, so
                # ``settle`` never sees an empty queue while a turn is about to start.
                self.idle.clear()
                batch = self._take_pending()
                if not batch:
                    continue
                self._aim_reply(batch)
                await self.hub.ensure_up(WAKE_MCP_WAIT_S)
                self.dormant = False
                self.trace.emit(
                    "wake",
                    source=sorted({e.kind for e in batch}),
                    events=[e.event_id for e in batch],
                )
                result = await self.loop.run_turn(envelope(batch), drain=self._drain)
                self.turns.append(result)
                self.trace.emit(
                    "turn_end",
                    termination=result.termination.value,
                    steps=result.steps,
                    tool_calls=result.tool_calls,
                    error=result.error,
                )
                if result.termination is Termination.BUDGET_EXHAUSTED:
                    self.dormant = True
                if result.final_text and self.bus is not None:
                    await self._reply(result.final_text)
        except Exception as exc:
            reason = f"error: {type(exc).__name__}: {exc}"
            self.trace.emit("error", where="agent.run", error=reason)
            raise
        finally:
            await self.close(reason)

    async def _reply(self, text: str) -> None:
        assert self.bus is not None
        room = self._reply_room or self.bus.commons_room_id
        try:
            await self.bus.send(room, text)
        except BusSendError as exc:
            # The reply stays in the transcript; the agent goes on with the next wake.
            self.trace.emit("error", where="reply", room=room, error=str(exc), chars=len(text))

    async def _wait_for_wake(self, stop: asyncio.Event) -> None:
        waiters = {asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stop.wait())}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        self._wake.clear()

    async def settle(self) -> None:
        """Return once every event received so far has been handled."""
        while not (self._queue.empty() and self.idle.is_set()):
            await asyncio.sleep(0.05)

    async def close(self, reason: str) -> None:
        for task in self._background:
            task.cancel()
        if self.bus is not None:
            with contextlib.suppress(Exception):
                await self.bus.close()
        await self.hub.close()
        await self.model.close()
        self.trace.emit("run_end", reason=reason, turns=len(self.turns))
        self.trace.close()
        if self.transcript is not None:
            self.transcript.close()
