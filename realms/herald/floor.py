"""Floor control in the Commons, as Matrix power levels (physics, not law).

``events_default`` 50 with the floor-holder (and the referee) at 50 and everyone
else at 0 makes the homeserver refuse other agents' posts with 403. The system
user created the room, so it may always post; the operator sits at 50.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from realms.herald.directory import agent_users, get_bus, user_of
from realms.herald.matrix import matrix_client

SPEAK = 50
MANAGE = 100

_MANAGED_STATE = (
    "m.room.name",
    "m.room.topic",
    "m.room.avatar",
    "m.room.power_levels",
    "m.room.join_rules",
    "m.room.history_visibility",
    "m.room.canonical_alias",
    "m.room.encryption",
    "m.room.server_acl",
    "m.room.tombstone",
)


def power_levels(users: dict[str, int], *, events_default: int) -> dict[str, Any]:
    """Levels where only the system (creator) manages the room; agents at most speak."""
    return {
        "users": users,
        "users_default": 0,
        "events_default": events_default,
        "state_default": MANAGE,
        "invite": MANAGE,
        "kick": MANAGE,
        "ban": MANAGE,
        "redact": MANAGE,
        "events": {event_type: MANAGE for event_type in _MANAGED_STATE},
        "notifications": {"room": MANAGE},
    }


def _set_speakers(realm_id: str, speakers: Iterable[str | None], *, events_default: int) -> None:
    bus = get_bus(realm_id)
    granted = {user_of(bus, agent_id).user_id for agent_id in speakers if agent_id}
    users = {user_id: SPEAK if user_id in granted else 0 for user_id in agent_users(bus).values()}
    users[bus.operator_user_id] = SPEAK
    with matrix_client() as client:
        current = client.get_state(bus.commons_room_id, "m.room.power_levels")
        current["users"] = {**current.get("users", {}), **users}
        current["events_default"] = events_default
        client.put_state(bus.commons_room_id, "m.room.power_levels", current)


def grant_floor(realm_id: str, agent_id: str | None, referee_id: str | None = None) -> None:
    """Only ``agent_id`` (and the referee, if given) may post in the Commons."""
    _set_speakers(realm_id, (agent_id, referee_id), events_default=SPEAK)


def open_floor(realm_id: str) -> None:
    """Everyone may post in the Commons."""
    _set_speakers(realm_id, (), events_default=0)
