"""Termination: does the realm end at this tick, and why.

Conditions are checked in declared order and the first match wins. After the declared
list come, in this order, the implicit ``referee_verdict`` (when a referee's verdict ends
the realm and none is declared), ``manual`` (the realm row's stop flag) and
``no_active_participants``.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from realms.models import Realm
from realms.packages.schema.project import TERMINATION_TYPES
from realms.plan import RealmPlan
from realms.warden.snapshot import LiveSnapshot, parse_duration

TYPES = TERMINATION_TYPES
MATCH_MODES = ("substring", "exact", "regex")
SCOPES = ("any_agent", "all_agents", "realm_total")


@dataclass(frozen=True)
class Conclusion:
    reason: str
    detail: str

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "detail": self.detail}


@dataclass(frozen=True)
class Matcher:
    """A text test: ``substring`` (default), ``exact`` or ``regex`` (``re.search``)."""

    pattern: str
    mode: str = "substring"
    compiled: re.Pattern[str] | None = None

    def __call__(self, text: str) -> bool:
        if self.compiled is not None:
            return self.compiled.search(text) is not None
        if self.mode == "exact":
            return text.strip() == self.pattern.strip()
        return self.pattern in text


@dataclass(frozen=True)
class Condition:
    type: str
    limit: str | None = None
    limit_s: float | None = None
    path: str | None = None
    content: Matcher | None = None
    pattern: Matcher | None = None
    channel: str | None = None
    count: int = 1
    scope: str = "any_agent"


def parse_conditions(
    raw: Iterable[Mapping[str, Any]], *, where: str = "termination"
) -> list[Condition]:
    """Turn declared conditions into checkable ones; a bad entry raises a located ValueError."""
    return [_parse_one(item, f"{where}[{i}]") for i, item in enumerate(raw)]


def _parse_one(item: Mapping[str, Any], where: str) -> Condition:
    if not isinstance(item, Mapping):
        raise ValueError(f"{where}: expected an object; got {type(item).__name__}")
    kind = item.get("type")
    if kind not in TYPES:
        raise ValueError(f"{where}.type: must be one of {', '.join(TYPES)}; got {kind!r}")
    mode = item.get("match_mode") or "substring"
    if mode not in MATCH_MODES:
        raise ValueError(
            f"{where}.match_mode: must be one of {', '.join(MATCH_MODES)}; got {mode!r}"
        )
    count = item.get("count")
    count = 1 if count is None else count
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{where}.count: expected an integer ≥ 1; got {count!r}")

    limit = item.get("limit")
    limit_s: float | None = None
    if kind in ("duration", "stall"):
        if limit is None:
            raise ValueError(f"{where}.limit: required field missing")
        try:
            limit_s = parse_duration(limit)
        except ValueError as exc:
            raise ValueError(f"{where}.limit: {exc}") from None

    path = item.get("path")
    content = None
    if kind == "file":
        if not isinstance(path, str) or not path:
            raise ValueError(f"{where}.path: required field missing")
        if item.get("content_match") is not None:
            content = _matcher(str(item["content_match"]), mode, f"{where}.content_match")

    pattern = None
    if kind == "message":
        if not isinstance(item.get("pattern"), str) or not item["pattern"]:
            raise ValueError(f"{where}.pattern: required field missing")
        pattern = _matcher(item["pattern"], mode, f"{where}.pattern")

    scope = item.get("scope") or "any_agent"
    if scope not in SCOPES:
        raise ValueError(f"{where}.scope: must be one of {', '.join(SCOPES)}; got {scope!r}")
    return Condition(
        type=kind,
        limit=None if limit is None else str(limit),
        limit_s=limit_s,
        path=path if isinstance(path, str) else None,
        content=content,
        pattern=pattern,
        channel=item.get("channel") or None,
        count=count,
        scope=scope,
    )


def _matcher(pattern: str, mode: str, where: str) -> Matcher:
    if mode != "regex":
        return Matcher(pattern, mode)
    try:
        return Matcher(pattern, mode, re.compile(pattern))
    except re.error as exc:
        raise ValueError(f"{where}: not a valid regular expression: {exc}") from None


def evaluate(
    snapshot: LiveSnapshot,
    conditions: Sequence[Condition | Mapping[str, Any]],
    *,
    verdict_ends_realm: bool,
) -> Conclusion | None:
    """The first condition that holds for this snapshot, or ``None`` while the realm runs on.

    ``conditions`` may be parsed :class:`Condition` objects or the declared dicts.
    """
    effective = [
        c if isinstance(c, Condition) else _parse_one(c, f"termination[{i}]")
        for i, c in enumerate(conditions)
    ]
    if verdict_ends_realm and not any(c.type == "referee_verdict" for c in effective):
        effective.append(Condition(type="referee_verdict"))
    for condition in effective:
        found = _CHECKS[condition.type](snapshot, condition)
        if found is not None:
            return Conclusion(condition.type, found)
    for implicit in (_IMPLICIT_MANUAL, _IMPLICIT_NO_PARTICIPANTS):
        found = _CHECKS[implicit.type](snapshot, implicit)
        if found is not None:
            return Conclusion(implicit.type, found)
    return None


def _duration(s: LiveSnapshot, c: Condition) -> str | None:
    assert c.limit_s is not None
    if s.elapsed_s >= c.limit_s:
        return f"time limit {c.limit} reached"
    return None


def _stall(s: LiveSnapshot, c: Condition) -> str | None:
    assert c.limit_s is not None
    if s.idle_s >= c.limit_s:
        return f"no activity for {c.limit}"
    return None


def _file(s: LiveSnapshot, c: Condition) -> str | None:
    assert c.path is not None
    matched = []
    for rel, text in sorted(s.shared_files.items()):
        if not fnmatch.fnmatchcase(rel, c.path):
            continue
        if c.content is not None and (text is None or not c.content(text)):
            continue
        matched.append(rel)
    if len(matched) >= c.count:
        return f"{len(matched)} file(s) match {c.path}: {', '.join(matched[:5])}"
    return None


def _message(s: LiveSnapshot, c: Condition) -> str | None:
    assert c.pattern is not None
    channel = c.channel or "commons"
    hits = [m for m in s.messages if m.channel == channel and c.pattern(m.body)]
    if len(hits) >= c.count:
        return f"{len(hits)} message(s) match {c.pattern.pattern!r} (last from {hits[-1].sender})"
    return None


def _budget(s: LiveSnapshot, c: Condition) -> str | None:
    agents = list(s.agents.values())
    capped = [a for a in agents if a.cap_usd is not None]
    if c.scope == "any_agent":
        spent = [a for a in capped if a.exhausted]
        if spent:
            a = spent[0]
            return f"{a.agent_id} spent ${a.spend_usd:.4f} of its ${a.cap_usd:.4f} cap"
        return None
    if not agents or len(capped) != len(agents):
        return None
    if c.scope == "all_agents":
        if all(a.exhausted for a in agents):
            return "every agent has spent its cap"
        return None
    total_cap = sum(a.cap_usd or 0.0 for a in agents)
    if s.total_spend_usd >= total_cap:
        return f"the realm spent ${s.total_spend_usd:.4f} of ${total_cap:.4f}"
    return None


def _verdict(s: LiveSnapshot, c: Condition) -> str | None:
    if s.verdict is None:
        return None
    outcome = s.verdict.get("outcome")
    return f"the referee ruled: {outcome}" if outcome else "the referee ruled"


def _machine(s: LiveSnapshot, c: Condition) -> str | None:
    if s.machine_state is not None and s.machine_state in s.machine_terminal:
        return f"the state machine reached {s.machine_state}"
    return None


def _tasks_complete(s: LiveSnapshot, c: Condition) -> str | None:
    # An empty board is not a finished one: the team has not planned yet.
    if s.tasks_total and s.tasks_done == s.tasks_total:
        return f"all {s.tasks_total} tasks on the board are done"
    return None


def _manual(s: LiveSnapshot, c: Condition) -> str | None:
    return "stop requested by the operator" if s.stop_requested else None


def _no_participants(s: LiveSnapshot, c: Condition) -> str | None:
    if s.participants and not s.live_participants:
        return "every participant has been stopped"
    return None


_IMPLICIT_MANUAL = Condition(type="manual")
_IMPLICIT_NO_PARTICIPANTS = Condition(type="no_active_participants")

_CHECKS = {
    "duration": _duration,
    "stall": _stall,
    "file": _file,
    "message": _message,
    "budget_exhausted": _budget,
    "referee_verdict": _verdict,
    "machine_terminal": _machine,
    "tasks_complete": _tasks_complete,
    "manual": _manual,
    "no_active_participants": _no_participants,
}


LOOP = "loop"
"""Not a declarable condition: the kind of an ending ``spec.loops`` (action ``conclude``)
decided, from an agent found repeating itself (:mod:`realms.warden.loops`)."""


def loop_conclusion(detail: str) -> Conclusion:
    return Conclusion(LOOP, detail)


def realm_conditions(plan: RealmPlan) -> list[Condition]:
    """The realm's declared conditions, checkable (the plan says which dict declares them)."""
    return parse_conditions(plan.termination)


def request_stop(realm_id: str) -> bool:
    """Pull the kill switch: set the realm row's flag, which the Warden reads each tick.

    False when there is no such realm.
    """
    return Realm.objects.filter(realm_id=realm_id).update(stop_requested=True) > 0
