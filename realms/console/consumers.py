"""The realm page's websocket, ``ws/realms/<realm_id>/``: history since the client's last
sighting, then the realm's live messages and events (payloads in ``realms.console.feed``).

Only the operator's session connects (the origin check is in ``bearpit.asgi``). The
consumer joins the realm's group before it reads the history, so nothing falls between
the two; what arrives both ways is sent once.
"""

from __future__ import annotations

from collections import deque
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from bearpit.auth import is_operator
from chronicle import selectors
from chronicle.live import realm_group
from realms.console import feed

# Close codes a client can tell apart (4000 + the HTTP status it would have been).
BAD_QUERY = 4400
NOT_OPERATOR = 4403
UNKNOWN_REALM = 4404
# Live items already sent in the replay are skipped; the window only needs to outlast the
# replay's overlap with the live stream.
_SENT_WINDOW = 4_096


def parse_after(query_string: bytes) -> tuple[int, int]:
    """``after_event`` and ``after_ts`` from the query (both default to 0, everything)."""
    query = parse_qs(query_string.decode("latin-1"), keep_blank_values=True)
    values = []
    for name in ("after_event", "after_ts"):
        raw = query.get(name, ["0"])[-1]
        if not raw.isdigit() or len(raw) > 18:
            raise ValueError(f"{name}: expected a non-negative integer, got {raw[:40]!r}")
        values.append(int(raw))
    return values[0], values[1]


class RealmConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    realm_id: str
    group: str

    async def connect(self) -> None:
        self.group = ""
        if not is_operator(self.scope.get("user")):
            await self.close(code=NOT_OPERATOR)
            return
        self.realm_id = str(self.scope["url_route"]["kwargs"]["realm_id"])
        await self.accept()
        try:
            after_event, after_ts = parse_after(self.scope.get("query_string", b""))
        except ValueError as exc:
            await self.send_json(feed.error(str(exc)))
            await self.close(code=BAD_QUERY)
            return
        if not await database_sync_to_async(selectors.realm_known)(self.realm_id):
            await self.send_json(feed.error(f"realm_id: no realm {self.realm_id!r}"))
            await self.close(code=UNKNOWN_REALM)
            return
        self._sent: deque[tuple[str, str | int]] = deque(maxlen=_SENT_WINDOW)
        self._sent_set: set[tuple[str, str | int]] = set()
        self.group = realm_group(self.realm_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        backlog, truncated = await database_sync_to_async(feed.replay)(
            self.realm_id, after_event, after_ts
        )
        for payload in backlog:
            await self._send_once(payload)
        await self.send_json(feed.ready(len(backlog), truncated=truncated))

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """The page only listens; anything it sends is ignored."""

    async def realm_message(self, message: dict[str, Any]) -> None:
        await self._send_once(feed.message_payload(message["data"]))

    async def realm_event(self, message: dict[str, Any]) -> None:
        for payload in feed.event_payloads(message["data"]):
            await self._send_once(payload)

    async def _send_once(self, payload: dict[str, Any]) -> None:
        key = (str(payload["kind"]), payload.get("event_id") or payload.get("id") or 0)
        if key in self._sent_set:
            return
        if len(self._sent) == self._sent.maxlen:
            self._sent_set.discard(self._sent[0])
        self._sent.append(key)
        self._sent_set.add(key)
        await self.send_json(payload)
