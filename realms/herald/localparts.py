"""The Matrix localparts of agents: ``bp_<realm id>=<agent id>``.

The mapping must be injective: two (realm, agent) pairs sharing a user would share a
token, a display name and the gate's verdicts. Realm ids and agent ids are lower-case
letters, digits and dashes (the package format's rules, checked here again), so neither
can hold ``=``; the one ``=`` in a localpart therefore says exactly where the realm id
ends, and the pair can be read back. The operator's localpart never holds ``=`` (see
:func:`realms.herald.config.operator_localpart`), and the system's is fixed.

Imported by the gate module inside the homeserver: no Django here.
"""

from __future__ import annotations

import re

from realms.ids import REALM_ID, check_realm_id

USER_PREFIX = "bp_"
SEPARATOR = "="

# Agent ids as agent.json allows; realm ids follow the one rule of realms.ids.
AGENT_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")


def check_agent_id(agent_id: str) -> None:
    if not AGENT_ID.fullmatch(agent_id):
        raise ValueError(
            f"agent id {agent_id!r}: expected 1-64 lower-case letters, digits and '-', "
            "not starting with '-'"
        )


def agent_localpart(realm_id: str, agent_id: str) -> str:
    """The agent's localpart; ids outside the rules are refused, never rewritten."""
    check_realm_id(realm_id)
    check_agent_id(agent_id)
    return f"{USER_PREFIX}{realm_id}{SEPARATOR}{agent_id}"


def realm_of(localpart: str) -> str | None:
    """The realm id of an agent's localpart, or None when it is not one."""
    if not localpart.startswith(USER_PREFIX):
        return None
    realm_id, sep, agent_id = localpart[len(USER_PREFIX) :].partition(SEPARATOR)
    if not sep or not REALM_ID.fullmatch(realm_id) or not AGENT_ID.fullmatch(agent_id):
        return None
    return realm_id
