"""The birth system prompt and the envelope that wraps incoming bus events."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.birth import BirthConfig
from runtime.prompts import events_text, system_text

_CLOSE_TAG = "</incoming_events"


def system_prompt(config: BirthConfig, tool_names: list[str], unavailable: list[str]) -> str:
    """Render the system prompt from the birth inputs, or return the pre-rendered one."""
    if config.system_prompt is not None:
        return config.system_prompt
    assert config.prompt is not None  # the birth validator guarantees one of the two
    return system_text(
        **config.prompt.model_dump(),
        tool_names=tool_names,
        unavailable_servers=unavailable,
        skills=config.skills,
    )


@dataclass(frozen=True)
class IncomingEvent:
    """One thing that wakes the agent: a bus message, a timer, finished background work."""

    kind: str  # "message" | "timer" | "job"
    sender: str
    room: str
    room_id: str | None
    body: str
    time: str
    event_id: str | None = None
    ts_ms: int = 0  # the bus's own timestamp; orders events that arrive out of order
    floor_call: bool = False  # the platform calls the agent to act here (see BusMessage)


def envelope(events: list[IncomingEvent]) -> str:
    """One clearly delimited, untrusted block; a body cannot close the block early."""
    safe = [
        IncomingEvent(
            kind=e.kind,
            sender=e.sender,
            room=e.room,
            room_id=e.room_id,
            body=e.body.replace(_CLOSE_TAG, "<\\/incoming_events"),
            time=e.time,
            event_id=e.event_id,
        )
        for e in events
    ]
    return events_text(events=safe)
