"""Schedules: wake the agent with a note after a delay, or every so often.

They live as long as the session: a schedule due while the session is open wakes the agent
(at once when it is idle, at the next round boundary when it is mid-turn); closing the
session drops them. At most ``max_schedules`` are pending at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from runtime.tools import ToolDefinition, ToolFailure, object_schema

MIN_EVERY_S = 10.0


@dataclass
class Schedule:
    id: str
    note: str
    after_s: float | None
    every_s: float | None
    due: float
    fired: int = 0
    task: asyncio.Task[None] | None = None

    def line(self) -> str:
        when = f"every {self.every_s:g}s" if self.every_s else f"once, after {self.after_s:g}s"
        left = max(0, round(self.due - time.monotonic()))
        return f"{self.id} [{when}; next in {left}s; fired {self.fired}] {self.note[:200]}"


class Scheduler:
    def __init__(self, notify: Callable[[str], None], max_schedules: int) -> None:
        self._notify = notify
        self._max = max_schedules
        self._count = 0
        self.pending: dict[str, Schedule] = {}

    def add(self, note: str, after_s: float | None, every_s: float | None) -> Schedule:
        if (after_s is None) == (every_s is None):
            raise ToolFailure("give exactly one of after_s and every_s", kind="invalid_arguments")
        if len(self.pending) >= self._max:
            raise ToolFailure(
                f"{self._max} schedules are pending already; cancel one", kind="schedule_cap"
            )
        self._count += 1
        first = after_s if after_s is not None else every_s
        assert first is not None
        item = Schedule(f"s{self._count}", note, after_s, every_s, time.monotonic() + first)
        item.task = asyncio.create_task(self._run(item), name=f"schedule-{item.id}")
        self.pending[item.id] = item
        return item

    async def _run(self, item: Schedule) -> None:
        while True:
            await asyncio.sleep(max(0.0, item.due - time.monotonic()))
            item.fired += 1
            self._notify(f"schedule {item.id} is due: {item.note}")
            if item.every_s is None:
                self.pending.pop(item.id, None)
                return
            item.due += item.every_s

    def cancel(self, schedule_id: str) -> Schedule:
        item = self.pending.pop(schedule_id, None)
        if item is None:
            known = ", ".join(self.pending) or "none"
            raise ToolFailure(
                f"no pending schedule {schedule_id!r} (pending: {known})", "not_found"
            )
        if item.task is not None:
            item.task.cancel()
        return item

    def close(self) -> None:
        for item in list(self.pending.values()):
            if item.task is not None:
                item.task.cancel()
        self.pending.clear()

    def tools(self) -> list[ToolDefinition]:
        async def schedule(args: dict[str, Any]) -> str:
            item = self.add(args["note"], args.get("after_s"), args.get("every_s"))
            return f"scheduled {item.line()}"

        async def schedule_cancel(args: dict[str, Any]) -> str:
            return f"cancelled {self.cancel(args['id']).line()}"

        async def schedule_list(args: dict[str, Any]) -> str:
            return "\n".join(s.line() for s in self.pending.values()) or "(no schedules)"

        return [
            ToolDefinition(
                "schedule",
                "Be woken with a note later while this session is open: after_s seconds "
                f"from now (once) or every every_s seconds (at least {MIN_EVERY_S:g}).",
                object_schema(
                    {
                        "note": {"type": "string", "minLength": 1, "maxLength": 2000},
                        "after_s": {"type": "number", "minimum": 1, "maximum": 7 * 86400},
                        "every_s": {"type": "number", "minimum": MIN_EVERY_S, "maximum": 86400},
                    },
                    ["note"],
                ),
                schedule,
            ),
            ToolDefinition(
                "schedule_cancel",
                "Cancel a pending schedule by id.",
                object_schema({"id": {"type": "string", "pattern": "^s[0-9]+$"}}, ["id"]),
                schedule_cancel,
            ),
            ToolDefinition(
                "schedule_list", "List the pending schedules.", object_schema({}, []), schedule_list
            ),
        ]
