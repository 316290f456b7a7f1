"""Room physics at the homeserver: a Synapse module, loaded through ``modules:``.

Agents (users in the ``bp_`` namespace, except the exempt operator) may not create
rooms, invite anyone, or join a room they were not invited to, unless their realm
allows side channels. The allow-list is a small JSON file the platform rewrites
when a realm is provisioned or torn down; it is re-read whenever it changes.

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

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateConfig:
    agent_prefix: str
    exempt: frozenset[str]
    allow_file: str


class AllowList:
    """Localpart prefixes (``bp_<realm>-``) of realms that allow side channels."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._prefixes: tuple[str, ...] = ()

    def prefixes(self) -> tuple[str, ...]:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return ()
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            try:
                with open(self.path, encoding="utf-8") as handle:
                    data = json.load(handle)
                self._prefixes = tuple(str(p) for p in data.get("side_channel_prefixes", []))
                self._stamp = stamp
            except (OSError, ValueError):
                # A half-written file: keep the last good list and look again next call.
                log.warning("gate: cannot read %s; keeping the previous allow-list", self.path)
        return self._prefixes


class HeraldGate:
    def __init__(self, config: GateConfig, api: ModuleApi) -> None:
        self.config = config
        self.allow = AllowList(config.allow_file)
        api.register_spam_checker_callbacks(
            user_may_create_room=self.user_may_create_room,
            user_may_invite=self.user_may_invite,
            user_may_join_room=self.user_may_join_room,
        )

    @staticmethod
    def parse_config(config: dict[str, Any]) -> GateConfig:
        return GateConfig(
            agent_prefix=str(config.get("agent_prefix", "bp_")),
            exempt=frozenset(str(u) for u in config.get("exempt", [])),
            allow_file=str(config["allow_file"]),
        )

    def _agent_localpart(self, user_id: str) -> str | None:
        if user_id in self.config.exempt:
            return None
        localpart = user_id[1:].split(":", 1)[0]
        return localpart if localpart.startswith(self.config.agent_prefix) else None

    def _realm_prefix(self, localpart: str) -> str | None:
        return next((p for p in self.allow.prefixes() if localpart.startswith(p)), None)

    def _confined(self, user_id: str) -> bool:
        """True when ``user_id`` is an agent whose realm does not allow side channels."""
        localpart = self._agent_localpart(user_id)
        return localpart is not None and self._realm_prefix(localpart) is None

    async def user_may_create_room(self, user_id: str, room_config: dict[str, Any]) -> Any:
        return Codes.FORBIDDEN if self._confined(user_id) else NOT_SPAM

    async def user_may_invite(self, inviter: str, invitee: str, room_id: str) -> Any:
        inviter_local = self._agent_localpart(inviter)
        if inviter_local is None:
            return NOT_SPAM
        prefix = self._realm_prefix(inviter_local)
        if prefix is None:
            return Codes.FORBIDDEN
        # Side channels stay inside the realm: no inviting another realm's agents.
        invitee_local = self._agent_localpart(invitee)
        if invitee_local is not None and not invitee_local.startswith(prefix):
            return Codes.FORBIDDEN
        return NOT_SPAM

    async def user_may_join_room(self, user_id: str, room_id: str, is_invited: bool) -> Any:
        if is_invited:
            return NOT_SPAM
        return Codes.FORBIDDEN if self._confined(user_id) else NOT_SPAM
