"""The safety net under the push: read realm rooms back and mirror what is missing.

Synapse queues application-service events in memory before it records a
transaction, so a homeserver killed at the wrong moment never pushes the last
events it accepted. Reading each room's recent timeline and mirroring what the
Chronicle lacks closes that gap; mirroring is idempotent, so overlap with
pushes in flight is harmless.
"""

from __future__ import annotations

import logging

from chronicle.models import Message
from realms.herald.matrix import MatrixClient, matrix_client
from realms.herald.mirror import mirror_events
from realms.herald.models import BusRealm, BusRoom

log = logging.getLogger(__name__)

# Paging stops after this many consecutive messages the Chronicle already holds:
# losses are confined to the tail the homeserver had not pushed yet.
KNOWN_RUN = 50


def _reconcile_room(client: MatrixClient, room_id: str) -> int:
    missing: list[dict[str, object]] = []
    known_run = 0
    token: str | None = None
    while True:
        page = client.messages(room_id, from_token=token)
        chunk = [e for e in page.get("chunk", []) if e.get("type") == "m.room.message"]
        ids = [str(e.get("event_id")) for e in chunk]
        known = set(
            Message.objects.filter(matrix_event_id__in=ids).values_list(
                "matrix_event_id", flat=True
            )
        )
        for event in chunk:
            if event.get("event_id") in known:
                known_run += 1
            else:
                known_run = 0
                missing.append({**event, "room_id": room_id})
        token = page.get("end")
        if known_run >= KNOWN_RUN or not token or not page.get("chunk"):
            break
    return mirror_events(missing) if missing else 0


def reconcile(realm_id: str | None = None) -> int:
    """Mirror messages of open realm rooms (or one realm's) the push has not delivered."""
    buses = BusRealm.objects.filter(closed_at__isnull=True)
    if realm_id is not None:
        buses = buses.filter(realm_id=realm_id)
    rooms = list(BusRoom.objects.filter(bus__in=buses).values_list("room_id", flat=True))
    if not rooms:
        return 0  # nothing to read back, so no homeserver needs to be reachable
    recovered = 0
    with matrix_client() as client:
        for room_id in rooms:
            recovered += _reconcile_room(client, room_id)
    if recovered:
        log.warning("reconcile: mirrored %d messages the homeserver had not pushed", recovered)
    return recovered
