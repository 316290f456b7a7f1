"""The realm's last messages for a terminal: readable times, one line per message.

The archived transcript keeps raw millisecond timestamps and whole bodies (it is a
record); this view is for reading while a realm runs. A line is
``[HH:MM:SS] <channel label> · <sender>: <body>`` in the configured time zone, with the
date in front when the message is not from today. Bodies are folded onto one line and
cut with an ellipsis unless the whole text is asked for.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

from django.utils import timezone

from chronicle import selectors
from chronicle.models import Message
from chronicle.transcript import sender_name

# Long enough for a move or a short ruling; a prompt-sized body is what --full is for.
BODY_CHARS = 160
CONTINUATION = "\n    "


def tail_lines(
    realm_id: str, *, limit: int, full: bool = False, today: date | None = None
) -> list[str]:
    """The last ``limit`` messages, oldest first; ``full`` keeps every line of every body."""
    labels = selectors.channel_labels(realm_id)
    day = today or timezone.localdate()
    return [
        _line(m, labels.get(m.channel, m.channel), day, full)
        for m in selectors.last_messages(realm_id, limit)
    ]


def readable_time(ts_ms: int, today: date) -> str:
    when = timezone.localtime(datetime.fromtimestamp(ts_ms / 1000, tz=UTC))
    clock = when.strftime("%H:%M:%S")
    return clock if when.date() == today else f"{when:%Y-%m-%d} {clock}"


def one_line(text: str, limit: int = BODY_CHARS) -> str:
    folded = " ".join(text.split())
    return folded if len(folded) <= limit else folded[: limit - 1].rstrip() + "…"


def _line(message: Message, label: str, today: date, full: bool) -> str:
    body = CONTINUATION.join(message.body.splitlines()) if full else one_line(message.body)
    return f"[{readable_time(message.ts_ms, today)}] {label} · {sender_name(message)}: {body}"
