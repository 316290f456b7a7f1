"""Small real tools for loop tests."""

from __future__ import annotations

import asyncio
from typing import Any

from runtime.prompt import IncomingEvent, envelope
from runtime.tools import ToolDefinition, object_schema


async def _echo(args: dict[str, Any]) -> str:
    return f"echo: {args['text']}"


async def _big(args: dict[str, Any]) -> str:
    return "".join(f"line {i:06d}\n" for i in range(args["lines"]))


async def _slow(args: dict[str, Any]) -> str:
    await asyncio.sleep(args["seconds"])
    return "done"


async def _boom(args: dict[str, Any]) -> str:
    raise RuntimeError("kaboom")


ECHO = ToolDefinition(
    "echo",
    "Echo text back.",
    object_schema({"text": {"type": "string"}, "times": {"type": "integer"}}, ["text"]),
    _echo,
)
BIG = ToolDefinition(
    "big", "Lots of output.", object_schema({"lines": {"type": "integer"}}, ["lines"]), _big
)
SLOW = ToolDefinition(
    "slow",
    "Sleeps.",
    object_schema({"seconds": {"type": "number"}}, ["seconds"]),
    _slow,
    timeout_s=0.3,
)
BOOM = ToolDefinition("boom", "Always fails.", object_schema({}, []), _boom)
ALL = [ECHO, BIG, SLOW, BOOM]
ALLOW = [t.name for t in ALL]


def toolcheck_turn_wake() -> str:
    """The envelope of pong's first wake in toolcheck: the floor passed to it by the system."""
    return envelope(
        [
            IncomingEvent(
                "message",
                "system",
                "Commons",
                "!c:x",
                "@pong it is your turn. Conversation so far: [umpire] Round R1 starts. "
                "First word: blue. [ping] blue -> red",
                "2026-01-01 10:00:00 UTC",
            )
        ]
    )
