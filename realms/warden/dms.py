"""Delivery of private messages: the permission gate, per-round quotas, the dead.

``send_private`` only records a PRIVATE event; the Warden delivers it on its next
tick into the pair's DM room *as the sender*. ``plan_deliveries`` is the pure rule
set: given the new PRIVATE events and what was delivered before, it says what to
post. The tick carries the plan out through Herald and persists ``DmLedger``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


def pair_key(a: str, b: str) -> str:
    """The label of a DM room: the two ids, sorted, joined by `` · ``."""
    x, y = sorted((a, b))
    return f"{x} · {y}"


@dataclass
class DmLedger:
    sent: dict[str, dict[str, int]] = field(default_factory=dict)
    """round → sender → deliveries (round ``"0"`` when the realm has no turns)."""
    muted: list[str] = field(default_factory=list)
    """``sender@round`` pairs already told they are over quota."""
    dead_told: list[str] = field(default_factory=list)
    """``sender>recipient`` pairs already told the recipient is out."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DmLedger:
        return cls(**dict(data)) if data else cls()


@dataclass(frozen=True)
class Private:
    sender: str
    recipient: str
    text: str


@dataclass(frozen=True)
class Deliver:
    room_id: str
    sender: str
    recipient: str
    text: str


@dataclass(frozen=True)
class Notice:
    """A system notice in a DM room, posted without mentions."""

    room_id: str
    text: str


DmAction = Deliver | Notice


def plan_deliveries(
    privates: Iterable[Private],
    *,
    rooms: Mapping[str, str],
    eliminated: set[str],
    quotas: Mapping[str, int],
    round_number: int | None,
    ledger: DmLedger,
) -> list[DmAction]:
    """What to post for ``privates`` (in order). Mutates ``ledger``.

    ``rooms`` maps a pair label (``pair_key``) to its room id; a pair without a room
    was never permitted, so its messages stay recorded but undelivered. ``quotas``
    holds each sender's ``max_per_round`` (0 or absent: unlimited); quotas apply only
    when the realm has turns (``round_number`` not None).
    """
    actions: list[DmAction] = []
    round_key = str(round_number or 0)
    for msg in privates:
        room = rooms.get(pair_key(msg.sender, msg.recipient))
        if room is None or msg.sender == msg.recipient:
            continue
        if msg.sender in eliminated:
            continue
        if msg.recipient in eliminated:
            told = f"{msg.sender}>{msg.recipient}"
            if told not in ledger.dead_told:
                ledger.dead_told.append(told)
                actions.append(
                    Notice(
                        room,
                        f"🚫 {msg.recipient} is out of the realm; private messages to "
                        "them are no longer delivered.",
                    )
                )
            continue
        limit = quotas.get(msg.sender, 0)
        counts = ledger.sent.setdefault(round_key, {})
        if round_number is not None and limit and counts.get(msg.sender, 0) >= limit:
            muted = f"{msg.sender}@{round_key}"
            if muted not in ledger.muted:
                ledger.muted.append(muted)
                actions.append(
                    Notice(
                        room,
                        f"🔇 {msg.sender} has used this round's {limit} private "
                        "message(s); further ones this round are recorded but not delivered.",
                    )
                )
            continue
        counts[msg.sender] = counts.get(msg.sender, 0) + 1
        actions.append(Deliver(room, msg.sender, msg.recipient, f"@{msg.recipient} {msg.text}"))
    return actions
