"""Loop and echo detection (``spec.loops``): an agent that keeps repeating itself.

Each agent's last ``window`` Commons messages and last ``window`` tool calls are kept
between ticks in the Warden's cursors, so a tick looks only at what its Streams brought
(new speech, newly traced tool calls) and never reads the realm's history again. Two
messages are alike when their normalised texts are at least ``threshold`` similar; two
tool calls, when they name the same tool with the same arguments. ``repeats`` alike acts
in one agent's window make a loop, and the agent's window of that sort starts afresh,
so a nudged agent is nudged again only after it repeats itself that often once more.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Literal

from realms.plan import LoopsPlan

STATE_KEY = "loops"
"""Where the windows live in ``WardenState.cursors`` (beside the Streams' cursors)."""
KEY_CHARS = 400  # a long message is compared on its opening: enough to tell, cheap to keep
SHOWN_CHARS = 160

What = Literal["messages", "tool_calls"]

_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)
_MENTION = re.compile(r"@[\w.\-]+(?::[\w.\-]+)?")


def normalise(text: str) -> str:
    """What two messages are compared on: words only, in one case, mentions dropped.

    Punctuation, spacing, case and who was @mentioned do not make a message new.
    """
    words = _NOT_WORD.sub(" ", _MENTION.sub(" ", text).casefold())
    return " ".join(words.split())[:KEY_CHARS]


def similarity(a: str, b: str) -> float:
    """How alike two normalised texts are, from 0 (nothing shared) to 1 (equal)."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    return matcher.ratio()


def call_signature(name: str, arguments: object) -> str:
    """A tool call as compared: its name and its arguments, key order aside."""
    parsed: object = arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (json.JSONDecodeError, RecursionError):
            parsed = arguments.strip()
    try:
        canonical = json.dumps(parsed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        canonical = str(parsed)
    return f"{name}({canonical})"[:KEY_CHARS]


@dataclass(frozen=True)
class Act:
    """One message or tool call of an agent: its Chronicle id, time and compared key."""

    ref: int
    ts_ms: int
    key: str
    shown: str

    def to_json(self) -> list[Any]:
        return [self.ref, self.ts_ms, self.key, self.shown]

    @classmethod
    def from_json(cls, raw: object) -> Act | None:
        if not isinstance(raw, list) or len(raw) != 4:
            return None
        ref, ts, key, shown = raw
        if not isinstance(ref, int) or not isinstance(ts, int):
            return None
        return cls(ref, ts, str(key), str(shown))


@dataclass(frozen=True)
class Loop:
    """A loop found: whose, of which sort, and the alike acts (oldest first)."""

    agent: str
    what: What
    acts: tuple[Act, ...]
    window: int

    @property
    def detail(self) -> str:
        """The evidence in one line: the termination's detail and the report's evidence."""
        refs = ", ".join(f"#{a.ref}" for a in self.acts)
        if self.what == "messages":
            found = f"{len(self.acts)} near-identical messages"
            source = "messages"
        else:
            found = f"{len(self.acts)} identical tool calls"
            source = "trace events"
        return (
            f"{self.agent} repeated itself: {found} among its last {self.window} "
            f"({source} {refs}): {self.acts[-1].shown}"
        )

    def event(self, action: str) -> dict[str, Any]:
        """The SYSTEM payload that chronicles the loop and what the Warden did about it."""
        return {
            "event": "loop",
            "action": action,
            "agent": self.agent,
            "what": self.what,
            "window": self.window,
            "refs": [a.ref for a in self.acts],
            "ts_ms": [a.ts_ms for a in self.acts],
            "shown": [a.shown for a in self.acts],
            "detail": self.detail,
        }

    def nudge_text(self) -> str:
        if self.what == "messages":
            said = "your last messages say nearly the same thing"
        else:
            said = f"you have made the same call {self.acts[-1].shown} {len(self.acts)} times"
        return (
            f"{self.agent}, {said}. Repeating it will not move the realm: "
            "take a different step, or say something new."
        )


class Windows:
    """Every agent's recent messages and tool calls, as kept between ticks."""

    def __init__(self, raw: object = None) -> None:
        self.acts: dict[What, dict[str, list[Act]]] = {"messages": {}, "tool_calls": {}}
        data = raw if isinstance(raw, Mapping) else {}
        for what in ("messages", "tool_calls"):
            per_agent = data.get(what)
            if not isinstance(per_agent, Mapping):
                continue
            for agent, items in per_agent.items():
                acts = [Act.from_json(i) for i in items] if isinstance(items, list) else []
                self.acts[what][str(agent)] = [a for a in acts if a is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            what: {agent: [a.to_json() for a in acts] for agent, acts in per_agent.items() if acts}
            for what, per_agent in self.acts.items()
        }

    def add(self, plan: LoopsPlan, agent: str, what: What, act: Act) -> Loop | None:
        """Put ``act`` in the agent's window; the loop it closes, if it closes one."""
        window = self.acts[what].setdefault(agent, [])
        if any(a.ref == act.ref for a in window):
            return None  # seen already (a Stream's look-back may hand a row over again)
        window.append(act)
        del window[: max(0, len(window) - plan.window)]
        if what == "messages":
            alike = [a for a in window if similarity(a.key, act.key) >= plan.threshold]
        else:
            alike = [a for a in window if a.key == act.key]
        if len(alike) < plan.repeats:
            return None
        window.clear()
        return Loop(agent, what, tuple(alike), plan.window)


@dataclass(frozen=True)
class Spoken:
    """A Commons message as the tick's message Stream hands it over."""

    ref: int
    ts_ms: int
    agent: str
    body: str


@dataclass(frozen=True)
class Called:
    """A tool call as the agent's trace records it (a ``trace`` event of type ``tool_call``)."""

    ref: int
    ts_ms: int
    agent: str
    name: str
    arguments: object


def watch(
    plan: LoopsPlan,
    cursors: dict[str, Any],
    spoken: Iterable[Spoken],
    called: Iterable[Called],
) -> list[Loop]:
    """Feed this tick's new acts to the windows kept in ``cursors``; the loops they close.

    ``cursors`` is updated in place and is committed with the tick's other cursors.
    """
    windows = Windows(cursors.get(STATE_KEY))
    found: list[Loop] = []
    for msg in spoken:
        if not msg.agent:
            continue
        key = normalise(msg.body)
        if not key:
            continue  # an empty or punctuation-only message says nothing to repeat
        act = Act(msg.ref, msg.ts_ms, key, _shown(msg.body))
        loop = windows.add(plan, msg.agent, "messages", act)
        if loop is not None:
            found.append(loop)
    for call in called:
        if not call.agent or not call.name:
            continue
        signature = call_signature(call.name, call.arguments)
        act = Act(call.ref, call.ts_ms, signature, _shown(signature))
        loop = windows.add(plan, call.agent, "tool_calls", act)
        if loop is not None:
            found.append(loop)
    cursors[STATE_KEY] = windows.to_json()
    return found


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


def first_ending(found: Sequence[Loop], plan: LoopsPlan) -> Loop | None:
    """The loop that ends the realm at this tick, when the package says loops conclude."""
    return found[0] if found and plan.action == "conclude" else None
