"""A realm's bus: provisioning, credentials for the runtimes, teardown.

Floor control lives in :mod:`realms.herald.floor`, posting in
:mod:`realms.herald.posting`; both are re-exported here.

Provisioning talks to the homeserver between database writes, so it cannot be one
transaction. Instead every step is recorded as soon as it is done and the whole
function is resumable: calling it again (a retried task) reuses what exists. A room
is recorded before anything is posted in it, so the mirror knows its realm.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TypeVar

from django.db import transaction
from django.utils import timezone

from realms.herald import floor, gatefile, posting
from realms.herald.config import operator_localpart
from realms.herald.directory import (
    AgentCredentials,
    BusAgent,
    BusNotFound,
    RealmBus,
    agent_localpart,
    agent_users,
    find_dm_room,
    get_bus,
    permitted_pairs,
    user_of,
)
from realms.herald.matrix import Login, MatrixClient, MatrixError, matrix_client
from realms.herald.models import BusRealm, BusRoom, BusUser
from realms.herald.tokens import seal, unseal

__all__ = [
    "AgentCredentials",
    "BusAgent",
    "BusNotFound",
    "RealmBus",
    "agent_credentials",
    "announce",
    "dm_room",
    "grant_floor",
    "open_floor",
    "operator_message",
    "post_as_agent",
    "provision_bus",
    "system_notice",
    "teardown_bus",
]

announce = posting.announce
operator_message = posting.operator_message
post_as_agent = posting.post_as_agent
system_notice = posting.system_notice
grant_floor = floor.grant_floor
open_floor = floor.open_floor

log = logging.getLogger(__name__)

COMMONS_NAME = "Realm Commons"


def _validate(realm_id: str, agents: list[BusAgent]) -> None:
    if not realm_id:
        raise ValueError("provision_bus: realm_id is empty")
    ids = [a.agent_id for a in agents]
    if not ids:
        raise ValueError(f"provision_bus({realm_id}): no agents")
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"provision_bus({realm_id}): duplicate agent ids {duplicates}")
    for agent_id in ids:
        try:
            agent_localpart(realm_id, agent_id)
        except ValueError as exc:
            raise ValueError(f"provision_bus({realm_id}): {exc}") from None


def _check_owners(client: MatrixClient, realm_id: str, agents: list[BusAgent]) -> None:
    """Refuse, before the homeserver is asked anything, a user id that another realm or
    agent already holds: logging in as it would hand over that agent's live user."""
    wanted = {client.mxid(agent_localpart(realm_id, a.agent_id)): a.agent_id for a in agents}
    for user in BusUser.objects.filter(user_id__in=wanted).select_related("bus"):
        if (user.bus.realm_id, user.agent_id) != (realm_id, wanted[user.user_id]):
            raise ValueError(
                f"provision_bus({realm_id}): Matrix user {user.user_id} already belongs to "
                f"agent {user.agent_id} of realm {user.bus.realm_id}"
            )


# Homeserver calls for different users do not wait on each other, so a realm's users are
# made, and its members joined, a few at a time; the database is written from the caller.
HOMESERVER_CONCURRENCY = 8
T = TypeVar("T")
R = TypeVar("R")


def _concurrently(
    call: Callable[[T], R], items: Iterable[T]
) -> tuple[list[tuple[T, R]], Exception | None]:
    """``call`` on every item, a few at a time: the successes in item order, and the first
    failure (None if there was none). Every call finishes before this returns."""
    todo = list(items)
    with ThreadPoolExecutor(max(1, min(HOMESERVER_CONCURRENCY, len(todo)))) as pool:
        futures = [pool.submit(call, item) for item in todo]
    done: list[tuple[T, R]] = []
    first: Exception | None = None
    for item, future in zip(todo, futures, strict=True):
        problem = future.exception()
        if problem is None:
            done.append((item, future.result()))
        elif first is None:
            first = problem if isinstance(problem, Exception) else RuntimeError(str(problem))
    return done, first


def _matrix_user(client: MatrixClient, realm_id: str, agent: BusAgent) -> tuple[str, Login]:
    # One call makes the user and its token (the login is needed only on a resume).
    user_id, login = client.register_and_login(agent_localpart(realm_id, agent.agent_id))
    client.set_displayname(user_id, agent.agent_id)
    return user_id, login


def _ensure_users(client: MatrixClient, bus: BusRealm, agents: list[BusAgent]) -> dict[str, str]:
    """agent id → Matrix user id, creating (concurrently) the users that have no token yet."""
    existing = {u.agent_id: u for u in bus.users.all()}
    positions = {a.agent_id: position for position, a in enumerate(agents)}
    missing = [
        a for a in agents if a.agent_id not in existing or not existing[a.agent_id].token_encrypted
    ]

    def record(agent: BusAgent, made: tuple[str, Login]) -> None:
        user_id, login = made
        existing[agent.agent_id], _ = BusUser.objects.update_or_create(
            bus=bus,
            agent_id=agent.agent_id,
            defaults={
                "role": agent.role,
                "user_id": user_id,
                "device_id": login.device_id,
                "token_encrypted": seal(login.access_token),
                "position": positions[agent.agent_id],
            },
        )

    made, problem = _concurrently(partial(_matrix_user, client, bus.realm_id), missing)
    # What was made is kept even when another user failed, so a retry reuses it.
    for agent, pair in made:
        record(agent, pair)
    if problem is not None:
        raise problem
    return {a.agent_id: existing[a.agent_id].user_id for a in agents}


def _create_room(
    client: MatrixClient,
    bus: BusRealm,
    *,
    name: str,
    members: list[str],
    events_default: int,
    kind: str,
    label: str = "",
    pair: tuple[str, str] = ("", ""),
) -> BusRoom:
    levels = floor.power_levels(
        {m: 0 for m in members if m != bus.operator_user_id} | {bus.operator_user_id: 50},
        events_default=events_default,
    )
    room_id = client.create_room(
        {
            "name": name,
            "preset": "private_chat",
            "visibility": "private",
            "invite": members,
            "power_level_content_override": levels,
            "initial_state": [
                {"type": "m.room.join_rules", "state_key": "", "content": {"join_rule": "invite"}},
                {
                    "type": "m.room.history_visibility",
                    "state_key": "",
                    "content": {"history_visibility": "shared"},
                },
            ],
        }
    )
    with transaction.atomic():
        room = BusRoom.objects.create(
            bus=bus, room_id=room_id, kind=kind, label=label, agent_a=pair[0], agent_b=pair[1]
        )
        if kind == BusRoom.Kind.COMMONS:
            bus.commons_room_id = room_id
            bus.save(update_fields=["commons_room_id"])
    return room


def _join_all(
    client: MatrixClient, room_id: str, members: list[str], *, resumed: bool = False
) -> None:
    # A resumed run joins only who is missing: the gate refuses a join without an
    # invitation, and an invitation is used up by the first join.
    present = client.joined_members(room_id) if resumed else set()
    _, problem = _concurrently(
        lambda member: client.join(room_id, member), [m for m in members if m not in present]
    )
    if problem is not None:
        raise problem


def provision_bus(
    realm_id: str, agents: list[BusAgent], *, turns: bool, allow_side_channels: bool
) -> RealmBus:
    """Create the realm's users, the Commons and the permitted DM rooms."""
    _validate(realm_id, agents)
    with matrix_client() as client:
        _check_owners(client, realm_id, agents)
        operator = client.register(operator_localpart())
        bus, _ = BusRealm.objects.get_or_create(
            realm_id=realm_id,
            defaults={
                "system_user_id": client.system_user_id,
                "operator_user_id": operator,
                "turns": turns,
                "allow_side_channels": allow_side_channels,
            },
        )
        gatefile.allow_side_channels(realm_id, allow_side_channels)
        users = _ensure_users(client, bus, agents)
        commons_members = [*users.values(), operator]
        resumed = bool(bus.commons_room_id)
        if not resumed:
            _create_room(
                client,
                bus,
                name=COMMONS_NAME,
                members=commons_members,
                events_default=50 if turns else 0,
                kind=BusRoom.Kind.COMMONS,
            )
        _join_all(client, bus.commons_room_id, commons_members, resumed=resumed)
        dm_rooms: dict[tuple[str, str], str] = {}
        for a, b in permitted_pairs(agents):
            room = find_dm_room(bus, a, b)
            members = [users[a], users[b], operator]
            if room is not None:
                _join_all(client, room.room_id, members, resumed=True)
            else:
                label = f"{a} · {b}"
                room = _create_room(
                    client,
                    bus,
                    name=f"DM: {label}",
                    members=members,
                    events_default=0,
                    kind=BusRoom.Kind.DM,
                    label=label,
                    pair=(a, b),
                )
                _join_all(client, room.room_id, members)
                posting.send_notice(
                    client,
                    room.room_id,
                    f"🔒 Private channel between {a} and {b}. Only the two of you "
                    "(and the operator) can read it.",
                    [users[a], users[b]],
                )
            dm_rooms[(a, b)] = room.room_id
    log.info("bus of %s: %d agents, %d DM rooms", realm_id, len(users), len(dm_rooms))
    return RealmBus(
        realm_id=realm_id,
        system_user_id=bus.system_user_id,
        operator_user_id=bus.operator_user_id,
        commons_room_id=bus.commons_room_id,
        users=users,
        dm_rooms=dm_rooms,
    )


def dm_room(realm_id: str, a: str, b: str) -> str | None:
    """The DM room of the pair, or None when they may not write to each other."""
    room = find_dm_room(get_bus(realm_id), a, b)
    return room.room_id if room else None


def agent_credentials(realm_id: str, agent_id: str) -> AgentCredentials:
    """Bus identity, token and rooms for an agent's birth config."""
    bus = get_bus(realm_id)
    user = user_of(bus, agent_id)
    dms = {}
    for room in bus.rooms.filter(kind=BusRoom.Kind.DM):
        if agent_id in (room.agent_a, room.agent_b):
            dms[room.agent_b if room.agent_a == agent_id else room.agent_a] = room.room_id
    return AgentCredentials(
        mxid=user.user_id,
        access_token=unseal(user.token_encrypted),
        commons_room_id=bus.commons_room_id,
        dm_rooms=dms,
    )


def _quietly(what: str, call: Callable[[], object]) -> None:
    """Teardown goes on past a step the homeserver refuses (already gone, not a member)."""
    try:
        call()
    except MatrixError as exc:
        if exc.retryable:
            raise
        log.info("teardown: %s: %s", what, exc.errcode)


def teardown_bus(realm_id: str) -> None:
    """Close the realm's rooms and deactivate its agents; history stays in the Chronicle."""
    try:
        bus = get_bus(realm_id)
    except BusNotFound:
        return
    users = agent_users(bus)
    with matrix_client() as client:
        for room in bus.rooms.all():
            if room.kind == BusRoom.Kind.DM:
                members = [users[a] for a in (room.agent_a, room.agent_b) if a in users]
            else:
                members = list(users.values())
            for user_id in members:
                _quietly(
                    "kick",
                    partial(client.kick, room.room_id, user_id, "the realm has ended"),
                )
            _quietly("operator leave", partial(client.leave, room.room_id, bus.operator_user_id))
        for user_id in users.values():
            _quietly("deactivate", partial(client.deactivate, user_id))
    gatefile.allow_side_channels(realm_id, False)
    with transaction.atomic():
        bus.users.update(deactivated=True, token_encrypted="")
        bus.closed_at = timezone.now()
        bus.save(update_fields=["closed_at"])
