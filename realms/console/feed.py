"""What a realm page's websocket carries: one versioned, typed payload per thing seen.

Every payload is ``{"v": 1, "kind": ..., ...}``:

- ``message``: ``event_id`` (the Matrix event id, unique), ``channel``, ``sender``,
  ``agent`` (empty for the platform and the operator), ``body``, ``attachments``, ``ts``.
- ``event``: ``id`` (the Chronicle's), ``event_kind``, ``summary`` (the timeline's line),
  ``payload`` (redacted), ``ts``.
- ``spend``: ``id``, ``agent``, ``usd`` (this call's), ``cumulative``, ``cap``,
  ``tokens_in``, ``tokens_out``, ``ts`` — a SPEND event, which the ledger writes when a
  metered call settles.
- ``state``: ``id``, ``state`` (a realm-level lifecycle value), ``ts``.
- ``ready``: the history since what the client said it had seen has been sent
  (``backlog`` items; ``truncated`` when there was more than one connection replays).
- ``error``: ``error`` names what was wrong with the connection's query; it then closes.

Trace events are not sent (they are ``pit_trace``'s). A realm-level lifecycle event is
sent twice, as ``event`` (the timeline shows it) and as
``state``; both carry the same ``id``, and a client dedupes per kind by ``id`` (events)
or ``event_id`` (messages).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from chronicle.kinds import Kind
from chronicle.models import Event, Message
from chronicle.selectors import REALM_STATES
from realms.api.status import redact
from realms.console import timeline
from realms.herald.config import SYSTEM_LOCALPART

VERSION = 1


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def speaker(sender: str, agent: str) -> str:
    """Who a person reads as the author: the agent's id, "Bearpit" for the platform's own
    bus user (announcements, turn grants, operator messages), else the bus id as it is."""
    if agent:
        return agent
    if sender.startswith(f"@{SYSTEM_LOCALPART}:"):
        return "Bearpit"
    return sender


def message_payload(data: dict[str, Any]) -> dict[str, Any]:
    """From what the bus mirror publishes (``chronicle.live``'s ``message``)."""
    sender, agent = str(data.get("sender") or ""), str(data.get("sender_agent") or "")
    return {
        "v": VERSION,
        "kind": "message",
        "event_id": str(data.get("event_id") or ""),
        "channel": str(data.get("channel") or ""),
        "sender": sender,
        "agent": agent,
        "who": speaker(sender, agent),
        "body": str(data.get("body") or ""),
        "attachments": redact(data.get("attachments") or []),
        "ts": int(data.get("ts") or 0),
    }


def message_row(message: Message) -> dict[str, Any]:
    return message_payload(
        {
            "event_id": message.matrix_event_id or f"row:{message.pk}",
            "channel": message.channel,
            "sender": message.sender,
            "sender_agent": message.sender_agent,
            "body": message.body,
            "attachments": message.attachments,
            "ts": message.ts_ms,
        }
    )


def event_payloads(data: dict[str, Any]) -> list[dict[str, Any]]:
    """From what ``record_event`` publishes: the typed payloads one event makes."""
    event_id, kind, ts = int(data.get("id") or 0), str(data.get("kind") or ""), data.get("ts")
    payload = _dict(data.get("payload"))
    ts_ms = int(ts) if isinstance(ts, int) else 0
    if kind == Kind.SPEND:
        return [
            {
                "v": VERSION,
                "kind": "spend",
                "id": event_id,
                "agent": str(payload.get("agent") or ""),
                "usd": _number(payload.get("usd")),
                "cumulative": _number(payload.get("cumulative")),
                "cap": None if payload.get("cap") is None else _number(payload.get("cap")),
                "tokens_in": int(_number(payload.get("tokens_in"))),
                "tokens_out": int(_number(payload.get("tokens_out"))),
                "ts": ts_ms,
            }
        ]
    if kind == Kind.TRACE:
        return []  # the agents' model-call traces are pit_trace's, and the bulk of a realm
    if kind == Kind.LIFECYCLE:
        # The package snapshot is the run configuration panel's, and large.
        payload = {k: v for k, v in payload.items() if k != "project"}
    out: list[dict[str, Any]] = [
        {
            "v": VERSION,
            "kind": "event",
            "id": event_id,
            "event_kind": kind,
            "summary": timeline.summary(kind, redact(payload)),
            "payload": redact(payload),
            "ts": ts_ms,
        }
    ]
    if kind == Kind.LIFECYCLE and payload.get("event") in REALM_STATES:
        out.append(
            {
                "v": VERSION,
                "kind": "state",
                "id": event_id,
                "state": str(payload["event"]),
                "ts": ts_ms,
            }
        )
    return out


def event_row(event: Event) -> list[dict[str, Any]]:
    return event_payloads(
        {"id": event.pk, "kind": event.kind, "payload": event.payload, "ts": event.ts_ms}
    )


# Commits on PostgreSQL can land out of id order, and a message's time is the homeserver's:
# a replay reaches this far back before what the client saw, and the client dedupes.
REPLAY_SLACK_MS = 2_000
REPLAY_LIMIT = 2_000


def replay(realm_id: str, after_event: int, after_ts: int) -> tuple[list[dict[str, Any]], bool]:
    """What happened since the client's last event id and message time, oldest first,
    at most ``REPLAY_LIMIT`` rows of each (the newest; ``True`` when there were more)."""
    since = after_ts - REPLAY_SLACK_MS
    events = (
        Event.objects.filter(realm_id=realm_id)
        .filter(Q(pk__gt=after_event) | Q(ts_ms__gte=since))
        .exclude(kind=Kind.TRACE)
    )
    messages = Message.objects.filter(realm_id=realm_id, ts_ms__gte=since)
    event_rows = list(events.order_by("-id")[: REPLAY_LIMIT + 1])
    message_rows = list(messages.order_by("-ts_ms", "-id")[: REPLAY_LIMIT + 1])
    truncated = len(event_rows) > REPLAY_LIMIT or len(message_rows) > REPLAY_LIMIT
    items: list[tuple[int, int, dict[str, Any]]] = []
    for event in event_rows[:REPLAY_LIMIT]:
        items += [(event.ts_ms, 1, p) for p in event_row(event)]
    for message in message_rows[:REPLAY_LIMIT]:
        items.append((message.ts_ms, 0, message_row(message)))
    items.sort(key=lambda item: (item[0], item[1], item[2].get("id", 0)))
    return [payload for _, _, payload in items], truncated


def ready(backlog: int, *, truncated: bool) -> dict[str, Any]:
    return {"v": VERSION, "kind": "ready", "backlog": backlog, "truncated": truncated}


def error(text: str) -> dict[str, Any]:
    return {"v": VERSION, "kind": "error", "error": text}


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    return 0.0
