"""The Matrix bus: the agent's rooms, synced over TCP or the homeserver's Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

from runtime.birth import BusSettings
from runtime.bus import BusMessage, BusSendError, Deliver, Gate, mentions
from runtime.matrix_http import MatrixClient, MatrixError, new_txn_id
from runtime.trace import TraceWriter

SYNC_TIMEOUT_MS = 30_000
SEND_ATTEMPTS = 5
MAX_REPLY_CHARS = 30_000  # Matrix events are capped at 64 KiB
SYNC_FILTER = {
    "room": {
        "timeline": {"limit": 100, "types": ["m.room.message"]},
        "state": {"lazy_load_members": True, "types": []},
        "ephemeral": {"types": []},
        "account_data": {"types": []},
    },
    "presence": {"types": []},
    "account_data": {"types": []},
}


class MatrixBus:
    def __init__(
        self, settings: BusSettings, agent_id: str, state_dir: Path, trace: TraceWriter
    ) -> None:
        self.settings = settings
        self.commons_room_id = settings.commons_room_id
        self._trace = trace
        self._token_file = state_dir / "matrix-since"
        self._gate = Gate(
            own_mxid=settings.mxid,
            agent_id=agent_id,
            dm_room_ids=frozenset(settings.dm_rooms.values()),
            require_mention=settings.require_mention,
            sees_all=settings.referee_sees_all,
        )
        self._labels = {mxid: aid for aid, mxid in settings.peers.items()}
        if settings.system_mxid:
            self._labels[settings.system_mxid] = "system"
        if settings.operator_mxid:
            self._labels[settings.operator_mxid] = "operator"
        self._rooms = {settings.commons_room_id: "Commons"} | {
            room: f"DM with {peer}" for peer, room in settings.dm_rooms.items()
        }
        self.client = MatrixClient(
            settings.homeserver_url, settings.access_token, settings.socket_path
        )
        self._task: asyncio.Task[None] | None = None
        self._deliver: Deliver | None = None
        self.first_sync = asyncio.Event()

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._task = asyncio.create_task(self._sync_loop(), name="matrix-sync")

    async def wait_connected(self) -> None:
        await self.first_sync.wait()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.client.close()

    def _mentioned(self, text: str) -> list[str]:
        """Matrix ids of the peers a reply names as ``@<agent id>``, as real mentions."""
        return [
            mxid
            for agent_id, mxid in self.settings.peers.items()
            if mxid != self.settings.mxid and (mxid in text or mentions(agent_id, mxid, text, {}))
        ]

    async def send(self, room_id: str, text: str) -> None:
        if len(text) > MAX_REPLY_CHARS:
            text = text[:MAX_REPLY_CHARS] + " [... cut: the message was too long]"
        content: dict[str, Any] = {
            "msgtype": "m.text",
            "body": text,
            "m.mentions": {"user_ids": self._mentioned(text)},
        }
        problem = ""
        txn_id = new_txn_id()  # one per reply, so a retry after a lost answer posts once
        for attempt in range(SEND_ATTEMPTS):
            try:
                await self.client.send(room_id, "m.room.message", content, txn_id)
            except MatrixError as exc:
                problem = str(exc)
            else:
                return
            self._trace.emit("error", where="bus.send", room=room_id, error=problem)
            await asyncio.sleep(min(2.0**attempt, 30.0))
        raise BusSendError(f"could not post to {room_id}: {problem}")

    def _load_since(self) -> str | None:
        try:
            return self._token_file.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    async def _sync_loop(self) -> None:
        since = self._load_since()
        backoff = 1.0
        wanted = set(self._rooms)
        while True:
            try:
                resp = await self.client.sync(SYNC_FILTER, since, SYNC_TIMEOUT_MS if since else 0)
                since_next = str(resp["next_batch"])
            except (MatrixError, KeyError) as exc:
                # The homeserver is restarting or unreachable: keep the token, try again.
                self._trace.emit("error", where="bus.sync", error=str(exc))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 1.0
            rooms = resp.get("rooms") or {}
            for room_id in rooms.get("invite") or {}:
                if room_id in wanted:
                    try:
                        await self.client.join(room_id)
                    except MatrixError as exc:
                        self._trace.emit("error", where="bus.join", room=room_id, error=str(exc))
            for room_id, info in (rooms.get("join") or {}).items():
                for event in (info.get("timeline") or {}).get("events") or []:
                    if isinstance(event, dict):
                        self._handle(room_id, event)
            since = since_next
            self._token_file.parent.mkdir(parents=True, exist_ok=True)
            self._token_file.write_text(since, encoding="utf-8")
            self.first_sync.set()

    def _calls_me(self, room_id: str, sender: str, body: str, content: dict[str, Any]) -> bool:
        """Only the system user grants the floor, and only in the Commons."""
        gate = self._gate
        return (
            bool(self.settings.system_mxid)
            and sender == self.settings.system_mxid
            and room_id == self.commons_room_id
            and mentions(gate.agent_id, gate.own_mxid, body, content)
        )

    def _handle(self, room_id: str, source: dict[str, Any]) -> None:
        if source.get("type") != "m.room.message":
            return
        content = source.get("content") or {}
        body = content.get("body")
        sender = str(source.get("sender", ""))
        if not isinstance(body, str) or not self._gate.admits(room_id, sender, body, content):
            return
        assert self._deliver is not None
        self._deliver(
            BusMessage(
                room_id=room_id,
                room_label=self._rooms.get(room_id, room_id),
                sender=self._labels.get(sender, sender),
                body=body,
                ts_ms=int(source.get("origin_server_ts") or 0),
                event_id=str(source.get("event_id", "")),
                floor_call=self._calls_me(room_id, sender, body, content),
            )
        )
