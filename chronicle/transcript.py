"""A realm's transcript: every chronicled message, one line each.

Line format: ``[<ts_ms>] <channel label> · <sender>: <body>``. The channel label is
``commons`` for the Commons and ``a · b`` for a DM room, as named on the realm's
``running`` event; a room the Chronicle cannot name keeps its id. The sender is the
agent id for agent posts and the Matrix id otherwise (system, operator).
"""

from __future__ import annotations

from typing import Any, TypedDict

from chronicle import selectors
from chronicle.models import Message


class TranscriptMessage(TypedDict):
    ts: int
    channel: str
    sender: str
    body: str


class TranscriptPage(TypedDict):
    channels: dict[str, str]
    messages: list[TranscriptMessage]


def sender_name(message: Message) -> str:
    return message.sender_agent or message.sender


def format_line(message: Message, labels: dict[str, str]) -> str:
    label = labels.get(message.channel, message.channel)
    return f"[{message.ts_ms}] {label} · {sender_name(message)}: {message.body}"


def transcript_lines(realm_id: str, *, limit: int | None = None) -> list[str]:
    """Transcript lines oldest first; with ``limit`` only the last ``limit`` messages."""
    labels = selectors.channel_labels(realm_id)
    return [format_line(m, labels) for m in _tail(realm_id, limit)]


def render_transcript(realm_id: str) -> str:
    """The whole transcript as text, newline-terminated when not empty."""
    lines = transcript_lines(realm_id)
    return "\n".join(lines) + "\n" if lines else ""


def transcript_page(realm_id: str, *, limit: int | None = None) -> TranscriptPage:
    """The structured transcript the API serves: channel labels and the last messages."""
    labels = selectors.channel_labels(realm_id)
    rows: list[TranscriptMessage] = [
        {
            "ts": m.ts_ms,
            "channel": m.channel,
            "sender": sender_name(m),
            "body": m.body,
        }
        for m in _tail(realm_id, limit)
    ]
    seen = {row["channel"] for row in rows}
    channels = dict(labels)
    for channel in sorted(seen - labels.keys()):
        channels[channel] = channel
    return {"channels": channels, "messages": rows}


def _tail(realm_id: str, limit: int | None) -> list[Message]:
    qs: Any = selectors.messages(realm_id)
    if limit is None:
        return list(qs)
    newest = list(qs.order_by("-ts_ms", "-id")[: max(limit, 0)])
    newest.reverse()
    return newest
