"""Posting on a realm's bus: announcements, kickoff, nudges, operator messages,
brokered DMs. Mentions are real Matrix mentions: the body names each mentioned
user and ``m.mentions.user_ids`` lists them, so runtimes that gate on mentions
see them.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from typing import Any

from realms.herald.directory import get_bus, realm_room, user_of
from realms.herald.matrix import MatrixClient, matrix_client
from realms.herald.models import BusRealm

OPERATOR_PREFIX = "[operator] "


def message_content(
    text: str, mentions: Sequence[str] = (), *, notice: bool = False
) -> dict[str, Any]:
    """An ``m.room.message`` whose body names every mentioned user id."""
    missing = [m for m in mentions if m not in text]
    body = f"{' '.join(missing)} {text}" if missing else text
    content: dict[str, Any] = {"msgtype": "m.notice" if notice else "m.text", "body": body}
    if mentions:
        content["m.mentions"] = {"user_ids": list(dict.fromkeys(mentions))}
        formatted = html.escape(body)
        for user_id in dict.fromkeys(mentions):
            pill = (
                f'<a href="https://matrix.to/#/{html.escape(user_id)}">{html.escape(user_id)}</a>'
            )
            formatted = formatted.replace(html.escape(user_id), pill)
        content["format"] = "org.matrix.custom.html"
        content["formatted_body"] = formatted
    else:
        content["m.mentions"] = {}
    return content


def send_notice(client: MatrixClient, room_id: str, text: str, mentions: Sequence[str]) -> str:
    return client.send(room_id, message_content(text, mentions, notice=True))


def _mxids(bus: BusRealm, agent_ids: Iterable[str]) -> list[str]:
    return [user_of(bus, agent_id).user_id for agent_id in agent_ids]


def announce(realm_id: str, text: str, mentions: Sequence[str] = ()) -> str:
    """The system user posts in the Commons, mentioning the given agents."""
    bus = get_bus(realm_id)
    with matrix_client() as client:
        return client.send(bus.commons_room_id, message_content(text, _mxids(bus, mentions)))


def operator_message(realm_id: str, text: str, to: str | None = None) -> str:
    """The operator speaks in the Commons (mentioning ``to`` when given)."""
    bus = get_bus(realm_id)
    mentions = _mxids(bus, [to]) if to else []
    with matrix_client() as client:
        return client.send(
            bus.commons_room_id,
            message_content(OPERATOR_PREFIX + text, mentions),
            user_id=bus.operator_user_id,
        )


def post_as_agent(
    realm_id: str, agent_id: str, room_id: str, text: str, mentions: Sequence[str] = ()
) -> str:
    """Post as the agent itself (a brokered DM); floor and membership apply to it.

    Raises :class:`~realms.herald.matrix.MatrixError` (403) when the homeserver refuses.
    """
    bus = get_bus(realm_id)
    realm_room(bus, room_id)
    sender = user_of(bus, agent_id).user_id
    with matrix_client() as client:
        return client.send(room_id, message_content(text, _mxids(bus, mentions)), user_id=sender)


def system_notice(realm_id: str, room_id: str, text: str, mentions: Sequence[str] = ()) -> str:
    """A system notice (🔇 quota, 🚫 eliminated…) in one of the realm's rooms."""
    bus = get_bus(realm_id)
    realm_room(bus, room_id)
    with matrix_client() as client:
        return send_notice(client, room_id, text, _mxids(bus, mentions))
