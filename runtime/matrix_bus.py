"""The Matrix bus: a matrix-nio client syncing the agent's rooms, over TCP or a Unix socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import aiohttp
from nio import AsyncClient, AsyncClientConfig, JoinError, RoomSendError, SyncError, SyncResponse

from runtime.birth import BusSettings
from runtime.bus import BusMessage, BusSendError, Deliver, Gate, mentions
from runtime.trace import TraceWriter

SYNC_TIMEOUT_MS = 30_000
SEND_ATTEMPTS = 5
MAX_REPLY_CHARS = 30_000  # Matrix events are capped at 64 KiB
_FILTER = {
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
        # nio retries timed-out requests itself; a short cap on its wait keeps the agent
        # responsive soon after a homeserver restart.
        config = AsyncClientConfig(
            store_sync_tokens=False,
            encryption_enabled=False,
            max_timeout_retry_wait_time=5,
        )
        self.client = AsyncClient(settings.homeserver_url, settings.mxid, config=config)
        self.client.access_token = settings.access_token
        self.client.user_id = settings.mxid
        self._task: asyncio.Task[None] | None = None
        self._deliver: Deliver | None = None
        self.first_sync = asyncio.Event()

    async def start(self, deliver: Deliver) -> None:
        self._deliver = deliver
        if self.settings.socket_path:
            connector = aiohttp.UnixConnector(path=self.settings.socket_path)
            self.client.client_session = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.client.config.request_timeout),
            )
        self._task = asyncio.create_task(self._sync_loop(), name="matrix-sync")

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
        for attempt in range(SEND_ATTEMPTS):
            try:
                resp = await self.client.room_send(room_id, "m.room.message", content)
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                problem = f"{type(exc).__name__}: {exc}"
            else:
                if not isinstance(resp, RoomSendError):
                    return
                problem = str(resp.message)
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
                resp = await self.client.sync(
                    timeout=SYNC_TIMEOUT_MS if since else 0,
                    sync_filter=_FILTER,
                    since=since,
                    full_state=False,
                )
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                # The homeserver is restarting or unreachable: keep the token, try again.
                resp = SyncError(f"{type(exc).__name__}: {exc}")
            if isinstance(resp, SyncError) or not isinstance(resp, SyncResponse):
                problem = str(getattr(resp, "message", resp))
                self._trace.emit("error", where="bus.sync", error=problem)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10.0)
                continue
            backoff = 1.0
            for room_id in resp.rooms.invite:
                if room_id in wanted:
                    joined = await self.client.join(room_id)
                    if isinstance(joined, JoinError):
                        self._trace.emit(
                            "error", where="bus.join", room=room_id, error=joined.message
                        )
            for room_id, info in resp.rooms.join.items():
                for event in info.timeline.events:
                    self._handle(room_id, event.source)
            since = resp.next_batch
            self._token_file.parent.mkdir(parents=True, exist_ok=True)
            self._token_file.write_text(since, encoding="utf-8")
            self.first_sync.set()

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
            )
        )


def dump_filter() -> str:
    return json.dumps(_FILTER)
