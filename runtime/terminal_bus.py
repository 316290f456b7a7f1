"""Standalone mode's bus: the operator at a terminal plays everyone else.

Lines typed become messages: ``text`` comes from the operator in the Commons, ``name: text``
from ``name`` in the Commons (``system: @<agent> …`` is a floor call), ``dm name: text``
from ``name`` in a private room. The agent's replies are printed.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any, Protocol, TextIO

from runtime.bus import BusMessage, Deliver, mentions

COMMONS = "!commons:standalone"
_SPEAKER = re.compile(r"^(?:(dm)\s+)?([a-z0-9][a-z0-9-]{0,63}):\s*(.*)$", re.IGNORECASE)


class Writer(Protocol):
    def write(self, text: str, /) -> Any: ...

    def flush(self) -> Any: ...


class TerminalBus:
    def __init__(self, stdin: TextIO, stdout: Writer, agent_id: str) -> None:
        self.commons_room_id = COMMONS
        self._in = stdin
        self._out = stdout
        self._agent_id = agent_id
        self._task: asyncio.Task[None] | None = None
        self._count = 0
        self.closed = asyncio.Event()

    async def start(self, deliver: Deliver) -> None:
        self._task = asyncio.create_task(self._read(deliver), name="terminal-bus")

    async def wait_connected(self) -> None:
        return None  # the terminal is there from the start

    async def _read(self, deliver: Deliver) -> None:
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue[str] = asyncio.Queue()

        def pump() -> None:
            # A daemon thread, so a pending readline never holds up the process's exit.
            while True:
                line = self._in.readline()
                loop.call_soon_threadsafe(lines.put_nowait, line)
                if not line:
                    return

        threading.Thread(target=pump, name="terminal-input", daemon=True).start()
        while True:
            line = await lines.get()
            if not line or line.strip() in ("/quit", "/exit"):
                self.closed.set()
                return
            message = self.parse(line)
            if message is not None:
                deliver(message)

    def parse(self, line: str) -> BusMessage | None:
        text = line.strip()
        if not text:
            return None
        self._count += 1
        match = _SPEAKER.match(text)
        sender, room, label = "operator", COMMONS, "Commons"
        if match:
            sender, text = match.group(2).lower(), match.group(3)
            if match.group(1):
                room, label = f"!dm-{sender}:standalone", f"DM with {sender}"
        return BusMessage(
            room_id=room,
            room_label=label,
            sender=sender,
            body=text,
            ts_ms=int(time.time() * 1000),
            event_id=f"$terminal-{self._count}",
            floor_call=sender == "system"
            and room == COMMONS
            and mentions(self._agent_id, f"@{self._agent_id}:standalone", text, {}),
        )

    async def send(self, room_id: str, text: str) -> None:
        where = "Commons" if room_id == COMMONS else room_id.split(":")[0].lstrip("!")
        self._out.write(f"[{self._agent_id} → {where}] {text}\n")
        self._out.flush()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
