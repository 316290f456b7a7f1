"""Getting pushes flowing again after the homeserver or our endpoint was down.

A failed transaction marks the application service down and later events wait
for the next retry (backoff up to minutes). After a homeserver restart the
backlog waits for a new relevant event. So: the system user touches a heartbeat
room (a relevant event) and asks the homeserver to ping our endpoint, which
delivers what is pending within a fraction of a second. Events a killed
homeserver accepted but never queued for us are read back from the rooms
(:mod:`realms.herald.reconcile`).
"""

from __future__ import annotations

import logging
import time
from urllib.parse import quote

from realms.herald.matrix import MatrixClient, MatrixError, matrix_client
from realms.herald.reconcile import reconcile

log = logging.getLogger(__name__)

HEARTBEAT_ALIAS = "bp_heartbeat"
HEARTBEAT_EVENT = "org.bearpit.heartbeat"


def _heartbeat_room(client: MatrixClient) -> str:
    alias = f"#{HEARTBEAT_ALIAS}:{client.server_name}"
    try:
        data = client.request(
            "GET", f"/_matrix/client/v3/directory/room/{quote(alias, safe='')}", what="alias"
        )
        return str(data["room_id"])
    except MatrixError as exc:
        if exc.status != 404:
            raise
    return client.create_room(
        {
            "name": "Herald heartbeat",
            "preset": "private_chat",
            "visibility": "private",
            "room_alias_name": HEARTBEAT_ALIAS,
        }
    )


# Right after our endpoint restarts, the homeserver's first ping can fail on the pooled
# connection the restart closed (Twisted answers "AlreadyCalled"); the next one opens a
# fresh connection. A few quick tries tell that apart from an endpoint that is down.
PING_TRIES = 4
PING_PAUSE_S = 0.5


def _ping(client: MatrixClient) -> bool:
    for attempt in range(1, PING_TRIES + 1):
        try:
            client.ping()
            return True
        except MatrixError as exc:
            if attempt == PING_TRIES:
                log.warning("the homeserver could not reach the platform endpoint: %s", exc)
                return False
            time.sleep(PING_PAUSE_S)
    return False


def resume_delivery(*, reconcile_rooms: bool = True) -> bool:
    """Nudge pending pushes out, then read back what a crash kept from being pushed.

    Returns True when the homeserver reached our endpoint.
    """
    with matrix_client() as client:
        room_id = _heartbeat_room(client)
        # Not a realm room, so the mirror ignores it; it only wakes the AS scheduler.
        client.put_state(room_id, HEARTBEAT_EVENT, {"ts_ms": time.time_ns() // 1_000_000})
        if not _ping(client):
            return False
    if reconcile_rooms:
        reconcile()
    return True
