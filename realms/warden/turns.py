"""Floor control: who may speak in a turns realm, and when the floor moves on.

``TurnManager`` is pure logic over a JSON-serialisable ``TurnState``. It never
talks to the bus or the database: each call returns the ``Action``s the tick must
carry out (move the floor, post a cue, write a TURN event) and the tick persists
the state on the realm's ``WardenState`` row, so a restarted worker resumes the
rotation exactly where it stopped.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

HISTORY_LIMIT = 12
HISTORY_CLIP = 500
MIN_REANNOUNCE_S = 20.0

# Status lines the runtime (or a chatty model) posts that must never pass the floor.
_STATUS_PREFIXES = (
    "📚",
    "⏳",
    "⚡",
    "❌",
    "⚠️",
    "⚠",
    "🛠",
    "🔧",
    "⚙️",
    "⚙",
    "🔍",
    "💻",
    "⏱️",
    "⏱",
)
_RUNTIME_ERRORS = re.compile(
    r"rate[- ]limit|api call failed after \d+ retries|budget has been exceeded"
    r"|operation interrupted|\bhttp [45]\d\d\b",
    re.IGNORECASE,
)
_TOOL_MARKUP = re.compile(
    r"<(call|tool_call|function_call|tool)\b[^>]*>.*?(</\1>|$)", re.IGNORECASE | re.DOTALL
)
_ZERO_WIDTH = re.compile("[\u200b\u200c\u200d\u2060\ufeff]")


def is_substantive(body: str) -> bool:
    """Whether a Commons post counts as speech (it passes the floor, it is replayed)."""
    text = _ZERO_WIDTH.sub("", body).strip()
    if not text:
        return False
    if text.startswith(_STATUS_PREFIXES):
        return False
    first_line = text.splitlines()[0]
    if _RUNTIME_ERRORS.search(first_line) and len(text) < 300:
        return False
    if _TOOL_MARKUP.search(text):
        left = _TOOL_MARKUP.sub("", text).strip()
        if len(left) < 20:
            return False
    return True


def collapse(body: str, limit: int = HISTORY_CLIP) -> str:
    text = " ".join(_ZERO_WIDTH.sub("", body).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# An @ that starts a handle (not one inside an address such as a@b.example).
_HANDLE_AT = re.compile(r"(?<![\w-])@(?=\w)")


def quote(who: str, text: str) -> str:
    """One quoted line of a grant or a cue. The runtime treats any ``@id`` or Matrix id in
    a body as a mention, so a quoted handle would deliver the grant to the agent it names
    too, waking it out of turn on every later grant; quotes keep the names without the @."""
    return f"[{who}] {_HANDLE_AT.sub('', text)}"


@dataclass
class TurnConfig:
    participants: list[str]
    referee: str | None = None
    driving: bool = False
    referee_cue: Literal["round", "turn", "none"] = "round"
    min_rounds: int = 0
    silence_timeout_s: float = 90.0
    retire_after_misses: int = 0
    referee_rules: bool = False
    """The referee holds a realm-ending ``rule``: the driving cue reminds it to check."""


@dataclass
class TurnState:
    config: TurnConfig
    round: int = 1
    position: int = 0
    current: str | None = None
    awaiting: str | None = None  # "opener" | "round" while a driving referee resolves
    since: float = 0.0
    last_announce: float = 0.0
    removed: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    misses: dict[str, int] = field(default_factory=dict)
    spoke_this_round: list[str] = field(default_factory=list)
    round_messages: list[list[str]] = field(default_factory=list)
    history: list[list[str]] = field(default_factory=list)
    floor_open: bool = False
    started: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnState:
        values = dict(data)
        values["config"] = TurnConfig(**values["config"])
        return cls(**values)


@dataclass(frozen=True)
class Grant:
    """Give the floor to ``agent`` (None: nobody but the referee) and post ``text``."""

    agent: str | None
    text: str
    mentions: tuple[str, ...]


@dataclass(frozen=True)
class Post:
    text: str
    mentions: tuple[str, ...]


@dataclass(frozen=True)
class OpenFloor:
    pass


@dataclass(frozen=True)
class TurnEvent:
    payload: dict[str, Any]


Action = Grant | Post | OpenFloor | TurnEvent


class TurnManager:
    def __init__(self, state: TurnState) -> None:
        self.state = state

    @classmethod
    def create(cls, config: TurnConfig) -> TurnManager:
        return cls(TurnState(config=config))

    # -- views ---------------------------------------------------------------

    @property
    def config(self) -> TurnConfig:
        return self.state.config

    def active(self) -> list[str]:
        gone = set(self.state.removed) | set(self.state.retired)
        return [a for a in self.config.participants if a not in gone]

    def status(self) -> dict[str, Any]:
        """The shape ``turn_status`` answers with."""
        s = self.state
        active = self.active()
        upcoming = [a for a in active if a not in s.spoke_this_round and a != s.current]
        return {
            "active": not s.floor_open,
            "round": s.round,
            "last_completed_round": s.round - 1,
            "current": s.current,
            "order": active,
            "done_this_round": list(s.spoke_this_round),
            "upcoming_this_round": upcoming,
        }

    # -- inputs ----------------------------------------------------------------

    def start(self, now: float) -> list[Action]:
        s = self.state
        if s.started:
            return []
        s.started = True
        if self.config.driving and self.config.referee:
            return self._pause("opener", now)
        return self._grant_from(0, now)

    def observe(self, sender: str | None, body: str, now: float) -> list[Action]:
        """A Commons post from an agent (``sender`` None: system or operator)."""
        s = self.state
        if sender is None or not is_substantive(body):
            return []
        text = collapse(body)
        s.history = [*s.history, [sender, text]][-HISTORY_LIMIT:]
        if s.floor_open or not s.started:
            return []
        if sender == self.config.referee:
            if s.awaiting is not None:
                return self._resume(now)
            return []
        if sender != s.current or sender in s.spoke_this_round:
            return []
        s.spoke_this_round.append(sender)
        s.round_messages.append([sender, text])
        s.misses[sender] = 0
        return self._advance(now)

    def tick(self, now: float) -> list[Action]:
        """Silence handling: re-announce, skip, retire, referee timeout."""
        s = self.state
        if not s.started or s.floor_open:
            return []
        timeout = self.config.silence_timeout_s
        waited = now - s.since
        if s.awaiting is not None:
            if waited >= timeout:
                event = {"event": "referee_timeout", "awaiting": s.awaiting, "round": s.round}
                return [TurnEvent(event), *self._resume(now)]
            return []
        if s.current is None:
            return []
        if waited >= timeout:
            agent = s.current
            s.misses[agent] = s.misses.get(agent, 0) + 1
            actions: list[Action] = [
                TurnEvent({"event": "skipped", "agent": agent, "round": s.round})
            ]
            limit = self.config.retire_after_misses
            if limit and s.misses[agent] >= limit:
                s.retired.append(agent)
                actions.append(TurnEvent({"event": "retired", "agent": agent, "round": s.round}))
            return actions + self._advance(now)
        if now - s.last_announce >= max(MIN_REANNOUNCE_S, timeout / 2):
            s.last_announce = now
            left = int(max(0.0, timeout - waited))
            return [
                Post(
                    f"@{s.current} — still your turn (round {s.round}). Do any tool work "
                    f"first, then post one message. About {left}s left before you are skipped.",
                    (s.current,),
                )
            ]
        return []

    def remove(self, agent: str | None, now: float, *, by: str = "referee") -> list[Action]:
        """Apply an ELIMINATION (``agent`` None: the referee closed a round, nobody out)
        or a platform removal such as a budget kill (``by="platform"``)."""
        s = self.state
        actions: list[Action] = []
        was_current = False
        if agent is not None and agent in self.config.participants and agent not in s.removed:
            s.removed.append(agent)
            actions.append(
                TurnEvent({"event": "removed", "agent": agent, "by": by, "round": s.round})
            )
            was_current = agent == s.current
        if not s.started or s.floor_open:
            return actions
        if s.awaiting is not None and by == "referee":
            return actions + self._resume(now)
        if was_current:
            return actions + self._advance(now)
        if not self.active():
            return actions + self._open(now)
        return actions

    # -- transitions -------------------------------------------------------------

    def _advance(self, now: float) -> list[Action]:
        return self._grant_from(self.state.position + 1, now)

    def _grant_from(self, index: int, now: float) -> list[Action]:
        """Grant the first active participant at roster index >= ``index`` this lap."""
        s = self.state
        if not self.active():
            return self._open(now)
        order = self.config.participants
        gone = set(s.removed) | set(s.retired)
        for i in range(index, len(order)):
            if order[i] not in gone:
                return self._grant(i, now)
        return self._complete_round(now)

    def _grant(self, index: int, now: float) -> list[Action]:
        s = self.state
        agent = self.config.participants[index]
        s.position, s.current, s.since, s.last_announce = index, agent, now, now
        lines = [f"@{agent} — it is your turn (round {s.round})."]
        if s.history:
            lines.append("Conversation so far:")
            lines.extend(quote(who, text) for who, text in s.history)
        lines.append(
            "Do any tool work your turn needs first (tool calls are free and never end "
            "your turn), then post ONE message: posting passes the floor."
        )
        actions: list[Action] = [
            TurnEvent(
                {
                    "round": s.round,
                    "order": self.active(),
                    "position": self.active().index(agent),
                    "current": agent,
                    "min_rounds": self.config.min_rounds,
                }
            ),
            Grant(agent, "\n".join(lines), (agent,)),
        ]
        referee = self.config.referee
        if referee and self.config.referee_cue == "turn":
            actions.append(
                Post(f"@{referee} It is now {agent}'s turn (round {s.round}).", (referee,))
            )
        return actions

    def _complete_round(self, now: float) -> list[Action]:
        s = self.state
        completed = s.round
        messages = list(s.round_messages)
        s.round += 1
        s.position, s.current = 0, None
        s.spoke_this_round, s.round_messages = [], []
        event = {
            "event": "round_complete",
            "completed": completed,
            "round": s.round,
            "order": self.active(),
            "position": 0,
            "current": None,
            "min_rounds": self.config.min_rounds,
        }
        actions: list[Action] = [TurnEvent(event)]
        referee = self.config.referee
        if referee and self.config.driving:
            actions.extend(self._pause("round", now, completed=completed, messages=messages))
            return actions
        if referee and self.config.referee_cue == "round":
            # A turns realm gates its referee, so this cue is the only way it learns what
            # the round said (format §3.2), as the driving cue's transcript is.
            lines = [
                f"@{referee} Round {completed} is complete. You can act now through your "
                "tools, or let another round run.",
                "This round's messages:",
            ]
            lines.extend([quote(who, text) for who, text in messages] or ["(none)"])
            actions.append(Post("\n".join(lines), (referee,)))
        return actions + self._grant_from(0, now)

    def _pause(
        self,
        awaiting: str,
        now: float,
        *,
        completed: int | None = None,
        messages: list[list[str]] | None = None,
    ) -> list[Action]:
        s = self.state
        referee = self.config.referee
        assert referee is not None
        s.awaiting, s.current, s.since, s.last_announce = awaiting, None, now, now
        if awaiting == "opener":
            text = (
                f"@{referee} You open the realm. Do any tool work first, then post ONE "
                "message to open round 1; posting hands the floor to the first player."
            )
        else:
            lines = [
                f"@{referee} Round {completed} is complete. Still in play: "
                f"{', '.join(self.active()) or 'nobody'}.",
                "This round's messages:",
            ]
            if messages:
                lines.extend(quote(who, text) for who, text in messages)
            else:
                lines.append("(none)")
            lines.append(
                "Resolve the round now through your tools, then post ONE message; posting "
                "reopens the floor. To remove a player call eliminate."
            )
            if self.config.referee_rules:
                lines.append(
                    "Check the ending conditions and call rule now if the game is decided."
                )
            text = "\n".join(lines)
        return [Grant(None, text, (referee,))]

    def _resume(self, now: float) -> list[Action]:
        self.state.awaiting = None
        return self._grant_from(0, now)

    def _open(self, now: float) -> list[Action]:
        s = self.state
        s.floor_open, s.current, s.awaiting = True, None, None
        return [OpenFloor()]
