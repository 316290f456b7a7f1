"""Integrity findings: signs, read from a finished realm's Chronicle, that its result may
not mean what it says.

A realm can end "successfully" without a game having been played: a referee that ruled
before any participant spoke, rounds that closed in silence, a transcript of agents
repeating themselves, a referee woken by every message of the Commons. None of these is
an error the platform could refuse at the time; each is worth a line in the report.
Each finding carries a code, one line of text and the counts that support it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from chronicle import selectors
from chronicle.kinds import TERMINAL_LIFECYCLE, Kind, Lifecycle
from chronicle.models import Message

# Below this many participant messages a "mostly repeats" share says nothing.
MIN_MESSAGES_FOR_REPEATS = 4
REPEAT_SHARE = 0.5


@dataclass(frozen=True)
class Finding:
    code: str
    text: str
    evidence: dict[str, int] = field(default_factory=dict)

    def line(self) -> str:
        counts = ", ".join(f"{k}={v}" for k, v in self.evidence.items())
        return f"{self.text} [{self.code}" + (f": {counts}]" if counts else "]")


def finished(realm_id: str) -> bool:
    """Whether the realm has concluded (or ended otherwise): findings need the whole run."""
    state = selectors.lifecycle_state(realm_id)
    return state in TERMINAL_LIFECYCLE or state == Lifecycle.CONCLUDING


def _participants(realm_id: str) -> set[str]:
    config = selectors.run_config(realm_id)
    referee = config.get("referee")
    agents = config.get("agents")
    if not isinstance(agents, list):
        return set()
    return {
        str(a["id"])
        for a in agents
        if isinstance(a, dict) and a.get("id") and a.get("id") != referee
    }


def _participant_messages(realm_id: str, participants: set[str]) -> list[Message]:
    return list(selectors.messages(realm_id).filter(sender_agent__in=participants))


def _silent_rounds(realm_id: str, spoken_at: list[int]) -> list[int]:
    """Completed rounds in which no participant message was chronicled."""
    start = selectors.started_ms(realm_id) or 0
    silent = []
    for event in selectors.events(realm_id, Kind.TURN).filter(payload__event="round_complete"):
        completed = event.payload.get("completed")
        if isinstance(completed, int) and not any(start <= t <= event.ts_ms for t in spoken_at):
            silent.append(completed)
        start = event.ts_ms
    return silent


def findings(realm_id: str) -> list[Finding]:
    """The integrity findings of a finished realm; none while it still runs."""
    if not finished(realm_id):
        return []
    found: list[Finding] = []
    participants = _participants(realm_id)
    if not participants:
        return []  # a realm chronicled without its roster: nothing to judge against
    said = _participant_messages(realm_id, participants)

    if selectors.verdict(realm_id) is not None and not said:
        found.append(
            Finding(
                "verdict_without_play",
                "the referee ruled, but no participant wrote a message",
                {"participant_messages": 0, "participants": len(participants)},
            )
        )

    silent = _silent_rounds(realm_id, [m.ts_ms for m in said])
    if silent:
        rounds = ", ".join(str(r) for r in silent)
        found.append(
            Finding(
                "silent_rounds",
                f"round{'s' * (len(silent) != 1)} {rounds} closed with no participant message",
                {"silent_rounds": len(silent)},
            )
        )

    bodies = Counter(" ".join(m.body.split()) for m in said)
    repeats = sum(n - 1 for n in bodies.values())
    if len(said) >= MIN_MESSAGES_FOR_REPEATS and repeats / len(said) > REPEAT_SHARE:
        found.append(
            Finding(
                "mostly_repeats",
                f"{repeats} of {len(said)} participant messages repeat an earlier one exactly",
                {"repeats": repeats, "participant_messages": len(said)},
            )
        )

    config = selectors.run_config(realm_id)
    if config.get("referee") and config.get("require_mention") is False:
        commons = selectors.commons_room(realm_id)
        woken = sum(1 for m in said if m.channel == commons)
        found.append(
            Finding(
                "referee_woken_by_all",
                f"the referee {config['referee']} was woken by every Commons message "
                "(require_mention is off)",
                {"commons_messages": woken},
            )
        )
    return found
