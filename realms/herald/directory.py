"""What the platform knows about a realm's bus: shapes, look-ups and errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from realms import plan
from realms.herald import localparts
from realms.herald.models import BusRealm, BusRoom, BusUser


class BusNotFound(LookupError):
    """No bus (or no such agent or room) for the realm: bad input from the caller."""


@dataclass(frozen=True)
class BusAgent:
    """An agent as the bus needs it (``private_messaging`` as in agent.json)."""

    agent_id: str
    role: str = "participant"
    private_messaging: Mapping[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.agent_id

    @property
    def is_referee(self) -> bool:
        return plan.is_referee_role(self.role)

    @property
    def dm(self) -> plan.DmRule:
        return plan.DmRule.parse(self.private_messaging)


@dataclass(frozen=True)
class RealmBus:
    realm_id: str
    system_user_id: str
    operator_user_id: str
    commons_room_id: str
    users: dict[str, str]
    """agent id → Matrix user id"""
    dm_rooms: dict[tuple[str, str], str]
    """(a, b) in roster order → room id"""


class AgentCredentials(NamedTuple):
    """What an agent's runtime needs to reach the bus (the token is a secret)."""

    mxid: str
    access_token: str
    commons_room_id: str
    dm_rooms: dict[str, str]
    """peer agent id → room id"""


agent_localpart = localparts.agent_localpart


def get_bus(realm_id: str) -> BusRealm:
    try:
        return BusRealm.objects.get(realm_id=realm_id)
    except BusRealm.DoesNotExist:
        raise BusNotFound(f"realm {realm_id!r} has no bus (was it provisioned?)") from None


def agent_users(bus: BusRealm) -> dict[str, str]:
    """agent id → Matrix user id, in roster order."""
    return dict(bus.users.order_by("position").values_list("agent_id", "user_id"))


def user_of(bus: BusRealm, agent_id: str) -> BusUser:
    try:
        return bus.users.get(agent_id=agent_id)
    except BusUser.DoesNotExist:
        raise BusNotFound(f"realm {bus.realm_id!r} has no agent {agent_id!r} on its bus") from None


def realm_room(bus: BusRealm, room_id: str) -> BusRoom:
    try:
        return bus.rooms.get(room_id=room_id)
    except BusRoom.DoesNotExist:
        raise BusNotFound(f"room {room_id!r} is not a room of realm {bus.realm_id!r}") from None


def find_dm_room(bus: BusRealm, a: str, b: str) -> BusRoom | None:
    return (
        bus.rooms.filter(kind=BusRoom.Kind.DM)
        .filter(agent_a__in=(a, b), agent_b__in=(a, b))
        .exclude(agent_a=a, agent_b=a)
        .exclude(agent_a=b, agent_b=b)
        .first()
    )


def permitted_pairs(agents: list[BusAgent]) -> list[tuple[str, str]]:
    """Unordered pairs (in roster order) that get a DM room (the rule: ``plan.may_write``)."""
    return plan.permitted_pairs(agents)
