"""Five-field cron expressions: parsed up front with a located error, and their next time.

``minute hour day-of-month month day-of-week``, in UTC. Each field is ``*``, a number,
a range ``a-b``, a step ``*/n`` or ``a-b/n``, or a comma list of those; months may be
written ``jan`` to ``dec`` and days ``sun`` to ``sat``; day-of-week 0 and 7 are both Sunday.
When both day fields are restricted a time matches either one (as in Vixie cron).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
# (name, low, high, names counted from low)
FIELDS = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day of month", 1, 31, ()),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, DAYS),
)
MAX_CRON = 100
SEARCH_YEARS = 5  # long enough for Feb 29 on a given weekday to come round
_PART = re.compile(r"^(\*|[a-z0-9]+(?:-[a-z0-9]+)?)(?:/(\d+))?$")


class CronError(ValueError):
    """A cron expression that cannot be used; the message names the field and the part."""


@dataclass(frozen=True)
class Cron:
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def day_matches(self, when: datetime) -> bool:
        weekday = (when.weekday() + 1) % 7
        by_day = when.day in self.days
        by_weekday = weekday in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return by_day or by_weekday
        return by_day and by_weekday

    def next_after(self, after_ms: int) -> int | None:
        """The first matching minute strictly after ``after_ms``, in ms; None if none
        comes within five years (``30 2 * *`` style impossibilities)."""
        when = datetime.fromtimestamp(after_ms / 1000, UTC).replace(second=0, microsecond=0)
        when += timedelta(minutes=1)
        limit = when + timedelta(days=366 * SEARCH_YEARS)
        while when < limit:
            if when.month not in self.months:
                year, month = (
                    (when.year + 1, 1) if when.month == 12 else (when.year, when.month + 1)
                )
                when = when.replace(year=year, month=month, day=1, hour=0, minute=0)
                continue
            if not self.day_matches(when):
                when = (when + timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if when.hour not in self.hours:
                when = (when + timedelta(hours=1)).replace(minute=0)
                continue
            if when.minute not in self.minutes:
                when += timedelta(minutes=1)
                continue
            return int(when.timestamp() * 1000)
        return None


def _value(text: str, name: str, low: int, high: int, names: tuple[str, ...]) -> int:
    if text.isdigit():
        number = int(text)
    elif text in names:
        number = names.index(text) + (1 if name == "month" else 0)
    else:
        raise CronError(f"{name}: {text!r} is not a number from {low} to {high}")
    if not low <= number <= high:
        raise CronError(f"{name}: {number} is out of range {low}-{high}")
    return number


def _field(text: str, index: int) -> tuple[frozenset[int], bool]:
    name, low, high, names = FIELDS[index]
    values: set[int] = set()
    for part in text.split(","):
        match = _PART.match(part)
        if match is None:
            raise CronError(f"{name}: cannot read {part!r} (use *, 5, 1-5, */15 or 1,3,5)")
        body, step_text = match.groups()
        step = int(step_text) if step_text else 1
        if step < 1:
            raise CronError(f"{name}: the step in {part!r} must be at least 1")
        if body == "*":
            start, end = low, high
        elif "-" in body:
            first, last = body.split("-", 1)
            start = _value(first, name, low, high, names)
            end = _value(last, name, low, high, names)
            if start > end:
                raise CronError(f"{name}: the range {body!r} runs backwards")
        else:
            start = _value(body, name, low, high, names)
            end = high if step_text else start
        values.update(range(start, end + 1, step))
    if index == 4 and 7 in values:  # 7 is Sunday too
        values = (values - {7}) | {0}
    return frozenset(values), text != "*"


def parse_cron(text: str) -> Cron:
    """A five-field cron, or :class:`CronError` saying which field is wrong and why."""
    if len(text) > MAX_CRON:
        raise CronError(f"the cron is longer than {MAX_CRON} characters")
    parts = text.strip().lower().split()
    if len(parts) != 5:
        raise CronError(
            f"a cron has five fields (minute hour day-of-month month day-of-week); "
            f"{text.strip()!r} has {len(parts)}"
        )
    fields = [_field(part, i) for i, part in enumerate(parts)]
    cron = Cron(
        text=" ".join(parts),
        minutes=fields[0][0],
        hours=fields[1][0],
        days=fields[2][0],
        months=fields[3][0],
        weekdays=fields[4][0],
        days_restricted=fields[2][1],
        weekdays_restricted=fields[4][1],
    )
    return cron


def shortest_gap_s(cron: Cron, from_ms: int, fires: int = 48) -> float | None:
    """The shortest time between the next ``fires`` times, in seconds (None if it fires
    at most once in five years)."""
    times: list[int] = []
    at: int | None = from_ms
    while len(times) < fires and at is not None:
        at = cron.next_after(at)
        if at is not None:
            times.append(at)
    gaps = [(b - a) / 1000 for a, b in itertools.pairwise(times)]
    return min(gaps) if gaps else None
