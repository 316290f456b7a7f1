"""The bus as the runtime sees it: messages in, replies out.

:class:`Bus` is what the agent driver talks to. The Matrix implementation lives in
``runtime.matrix_bus``; ``runtime.terminal_bus`` plays the realm from a terminal (standalone mode).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class BusMessage:
    room_id: str
    room_label: str
    sender: str  # a label: an agent id, "system", "operator", or a Matrix id
    body: str
    ts_ms: int
    event_id: str
    floor_call: bool = False
    """The platform calls this agent to act in the Commons (a floor grant, a cue, a nudge):
    the system user's post there that mentions it. The turn it starts answers there."""


Deliver = Callable[[BusMessage], None]


class BusSendError(Exception):
    """A reply could not be posted after retrying."""


class Bus(Protocol):
    commons_room_id: str

    async def start(self, deliver: Deliver) -> None:
        """Begin receiving; every message this agent should see is passed to ``deliver``."""

    async def wait_connected(self) -> None:
        """Return once the bus has delivered its first sync (the agent is connected)."""

    async def send(self, room_id: str, text: str) -> None:
        """Post ``text`` as this agent in ``room_id``."""

    async def close(self) -> None: ...


def mentions(agent_id: str, mxid: str, body: str, content: dict[str, Any]) -> bool:
    """Does this message @mention the agent (by Matrix id, ``@agent_id``, or m.mentions)?"""
    listed = content.get("m.mentions", {})
    if isinstance(listed, dict) and mxid in (listed.get("user_ids") or []):
        return True
    formatted = str(content.get("formatted_body") or "")
    if mxid in body or mxid in formatted:
        return True
    return re.search(rf"(?<![\w-])@{re.escape(agent_id)}(?![\w-])", body, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Gate:
    """Who receives what (spec §3.2): DMs always; the Commons only when mentioned, if gated."""

    own_mxid: str
    agent_id: str
    dm_room_ids: frozenset[str]
    require_mention: bool
    sees_all: bool

    def admits(self, room_id: str, sender: str, body: str, content: dict[str, Any]) -> bool:
        if sender == self.own_mxid:
            return False
        if room_id in self.dm_room_ids:
            return True
        if self.sees_all or not self.require_mention:
            return True
        return mentions(self.agent_id, self.own_mxid, body, content)
