"""The TurnManager's floor moves, kept on the Warden's row until the bus has them.

A tick chronicles its turn events and stores the floor moves that go with them in
one transaction, then carries the moves out. So a turn's record always comes before
what an agent does on hearing the grant or the referee's cue (a referee eliminating
on the cue, say), and a tick that dies half-way neither loses a move nor records a
turn twice: the next tick carries out what is left. A move is dropped from the row
once the bus has it; at worst one post is made twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from realms.herald import floor, posting
from realms.warden.models import WardenState
from realms.warden.turns import Action, Grant, OpenFloor, Post, TurnEvent

Entry = dict[str, Any]


def split(actions: Sequence[Action]) -> tuple[list[dict[str, Any]], list[Entry]]:
    """The TURN payloads to chronicle and the bus moves to store, each in order."""
    events: list[dict[str, Any]] = []
    moves: list[Entry] = []
    for action in actions:
        if isinstance(action, TurnEvent):
            events.append(action.payload)
        elif isinstance(action, Grant):
            moves.append(
                {
                    "do": "grant",
                    "agent": action.agent,
                    "text": action.text,
                    "mentions": list(action.mentions),
                }
            )
        elif isinstance(action, Post):
            moves.append({"do": "post", "text": action.text, "mentions": list(action.mentions)})
        elif isinstance(action, OpenFloor):
            moves.append({"do": "open"})
    return events, moves


def carry_out(realm_id: str, referee: str | None, state_pk: int, moves: Sequence[Entry]) -> None:
    """Make each stored move on the bus, dropping it from the row once made."""
    left = list(moves)
    while left:
        move = left[0]
        kind = move.get("do")
        if kind == "grant":
            floor.grant_floor(realm_id, move.get("agent"), referee)
            posting.announce(realm_id, str(move["text"]), list(move["mentions"]))
        elif kind == "post":
            posting.announce(realm_id, str(move["text"]), list(move["mentions"]))
        elif kind == "open":
            floor.open_floor(realm_id)
        left.pop(0)
        WardenState.objects.filter(pk=state_pk).update(outbox=left)
