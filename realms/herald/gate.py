"""Room physics at the homeserver: a Synapse module, loaded through ``modules:``.

Agents (users in the ``bp_`` namespace, except the exempt system and operator) may not
create rooms, invite anyone, or join a room they were not invited to, unless their realm
allows side channels; even then they stay inside their realm: they may invite only its
agents, never join a room uninvited, and never give a room an alias or a directory entry.
The allow-list is a small JSON file of realm ids the platform rewrites when a realm is
provisioned or torn down; it is re-read whenever it changes. A user's realm is read from
its localpart (:mod:`realms.herald.localparts`) and compared exactly.

The same module loads :mod:`realms.herald.endpoints`, which refuses agents the client
endpoints the platform does not use (to-device messages among them).

Synapse imports this module in its own process: it must not import Django.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any

from synapse.module_api import NOT_SPAM, ModuleApi
from synapse.module_api.errors import Codes

from realms.herald import endpoints
from realms.herald.localparts import USER_PREFIX, realm_of

log = logging.getLogger(__name__)

KEY = "side_channel_realms"


@dataclass(frozen=True)
class GateConfig:
    exempt: frozenset[str]
    allow_file: str


class AllowList:
    """Realm ids of the realms that allow side channels."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._realms: frozenset[str] = frozenset()

    def realms(self) -> frozenset[str]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return frozenset()
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            try:
                with open(self.path, encoding="utf-8") as handle:
                    data = json.load(handle)
                self._realms = frozenset(str(r) for r in data.get(KEY, []))
                self._stamp = stamp
            except (OSError, ValueError, AttributeError):
                # A half-written file: keep the last good list and look again next call.
                log.warning("gate: cannot read %s; keeping the previous allow-list", self.path)
        return self._realms


class HeraldGate:
    def __init__(self, config: GateConfig, api: ModuleApi) -> None:
        self.config = config
        self.allow = AllowList(config.allow_file)
        api.register_spam_checker_callbacks(
            user_may_create_room=self.user_may_create_room,
            user_may_invite=self.user_may_invite,
            user_may_join_room=self.user_may_join_room,
            user_may_create_room_alias=self.user_may_create_room_alias,
            user_may_publish_room=self.user_may_publish_room,
            user_may_send_3pid_invite=self.user_may_send_3pid_invite,
        )
        endpoints.install(api)

    @staticmethod
    def parse_config(config: dict[str, Any]) -> GateConfig:
        return GateConfig(
            exempt=frozenset(str(u) for u in config.get("exempt", [])),
            allow_file=str(config["allow_file"]),
        )

    def _is_agent(self, user_id: str) -> bool:
        if user_id in self.config.exempt:
            return False
        return user_id[1:].split(":", 1)[0].startswith(USER_PREFIX)

    def _realm(self, user_id: str) -> str | None:
        """The agent's realm id (None for a namespace user that is not a realm's agent)."""
        return realm_of(user_id[1:].split(":", 1)[0])

    def _open_realm(self, user_id: str) -> str | None:
        """The agent's realm when that realm allows side channels, else None."""
        realm = self._realm(user_id)
        return realm if realm is not None and realm in self.allow.realms() else None

    def _may_invite(self, realm: str, invitee: str) -> bool:
        # Side channels stay inside the realm: no inviting another realm's agents.
        return not self._is_agent(invitee) or self._realm(invitee) == realm

    async def user_may_create_room(self, user_id: str, room_config: dict[str, Any]) -> Any:
        if not self._is_agent(user_id):
            return NOT_SPAM
        realm = self._open_realm(user_id)
        if realm is None:
            return Codes.FORBIDDEN
        # No way in for anyone uninvited, and no way for the room to be found.
        if room_config.get("room_alias_name") or room_config.get("visibility") == "public":
            return Codes.FORBIDDEN
        if room_config.get("invite_3pid"):
            return Codes.FORBIDDEN
        invitees = room_config.get("invite") or []
        if not all(isinstance(i, str) and self._may_invite(realm, i) for i in invitees):
            return Codes.FORBIDDEN
        return NOT_SPAM

    async def user_may_invite(self, inviter: str, invitee: str, room_id: str) -> Any:
        if not self._is_agent(inviter):
            return NOT_SPAM
        realm = self._open_realm(inviter)
        if realm is None or not self._may_invite(realm, invitee):
            return Codes.FORBIDDEN
        return NOT_SPAM

    async def user_may_join_room(self, user_id: str, room_id: str, is_invited: bool) -> Any:
        # Invitations are gated above, so an invited join stays inside the realm; an
        # uninvited one (a public room of another realm) never does.
        if is_invited or not self._is_agent(user_id):
            return NOT_SPAM
        return Codes.FORBIDDEN

    async def user_may_create_room_alias(self, userid: str, room_alias: Any) -> Any:
        return Codes.FORBIDDEN if self._is_agent(userid) else NOT_SPAM

    async def user_may_publish_room(self, userid: str, room_id: str) -> Any:
        return Codes.FORBIDDEN if self._is_agent(userid) else NOT_SPAM

    async def user_may_send_3pid_invite(
        self, inviter_userid: str, medium: str, address: str, room_id: str
    ) -> Any:
        return Codes.FORBIDDEN if self._is_agent(inviter_userid) else NOT_SPAM
