"""Mirroring bus messages into the Chronicle, exactly once per Matrix event id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from chronicle import live
from chronicle.kinds import Kind
from chronicle.models import Message, now_ms
from chronicle.services import record_event
from chronicle.values import make_storable, storable_ts_ms
from realms.herald.models import BusRoom, BusUser

_ATTACHMENT_TYPES = {"m.image", "m.file", "m.audio", "m.video"}


def _attachments(content: dict[str, Any]) -> list[dict[str, Any]]:
    msgtype = content.get("msgtype")
    if msgtype not in _ATTACHMENT_TYPES or not isinstance(content.get("url"), str):
        return []
    return [{"msgtype": msgtype, "url": content["url"], "name": str(content.get("body", ""))}]


def _message_events(events: Iterable[Any]) -> dict[str, dict[str, Any]]:
    """Well-formed ``m.room.message`` events by event id (a batch may repeat one)."""
    found: dict[str, dict[str, Any]] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("type") != "m.room.message":
            continue
        event_id, room_id, sender = event.get("event_id"), event.get("room_id"), event.get("sender")
        if isinstance(event_id, str) and isinstance(room_id, str) and isinstance(sender, str):
            found.setdefault(event_id, event)
    return found


@transaction.atomic(durable=True)
def mirror_events(events: Iterable[Any]) -> int:
    """Append the realm-room messages among ``events`` not already chronicled.

    Returns how many were new. A repeated delivery changes nothing; messages of rooms
    that belong to no realm are ignored.
    """
    by_id = _message_events(events)
    if not by_id:
        return 0
    room_ids = {e["room_id"] for e in by_id.values()}
    realms = dict(
        BusRoom.objects.filter(room_id__in=room_ids).values_list("room_id", "bus__realm_id")
    )
    relevant = {eid: e for eid, e in by_id.items() if e["room_id"] in realms}
    if not relevant:
        return 0
    seen = set(
        Message.objects.filter(matrix_event_id__in=list(relevant)).values_list(
            "matrix_event_id", flat=True
        )
    )
    fresh = [e for eid, e in relevant.items() if eid not in seen]
    if not fresh:
        return 0
    agents = dict(
        BusUser.objects.filter(user_id__in={e["sender"] for e in fresh}).values_list(
            "user_id", "agent_id"
        )
    )
    rows = []
    escaped: dict[str, list[str]] = {}
    for event in fresh:
        raw = event.get("content")
        content: dict[str, Any] = raw if isinstance(raw, dict) else {}
        # Already accepted by the homeserver, so never refused: what no database can
        # keep is escaped, and a SYSTEM event says so (see chronicle.values).
        body, changed = make_storable(str(content.get("body", "")), "body")
        attachments, more = make_storable(_attachments(content), "attachments")
        if changed or more:
            escaped[event["event_id"]] = changed + more
        rows.append(
            Message(
                realm_id=realms[event["room_id"]],
                channel=event["room_id"],
                sender=event["sender"],
                sender_agent=agents.get(event["sender"], ""),
                body=body,
                attachments=attachments,
                ts_ms=storable_ts_ms(event.get("origin_server_ts")) or now_ms(),
                matrix_event_id=event["event_id"],
            )
        )
    Message.objects.bulk_create(rows, ignore_conflicts=True)
    for row in rows:
        if row.matrix_event_id in escaped:
            payload = {"event": "message_escaped", "matrix_event_id": row.matrix_event_id}
            record_event(
                row.realm_id, Kind.SYSTEM, {**payload, "fields": escaped[row.matrix_event_id]}
            )
    for row in rows:
        live.publish(
            row.realm_id,
            "message",
            {
                "event_id": row.matrix_event_id,
                "channel": row.channel,
                "sender": row.sender,
                "sender_agent": row.sender_agent,
                "body": row.body,
                "attachments": row.attachments,
                "ts": row.ts_ms,
            },
        )
    return len(rows)
