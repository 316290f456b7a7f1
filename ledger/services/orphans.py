"""Letting go of reservations whose gateway died before it could settle them.

The call such a reservation guarded has no answer anywhere: the gateway that forwarded it
is gone, and the agent saw its connection drop (and may ask again, through a live
gateway, where it is reserved and metered anew). Its cost is unknown and is not counted;
the release is chronicled as a ``system`` event on the realm, so the books say so.

A reservation lives only in the process that made it, which names itself on the key
(``realms.forge.procs.identity``): only a holder of this host whose process is gone is let
go of; one of another host may be alive.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from chronicle.kinds import Kind
from chronicle.services import record_event
from ledger.models import VirtualKey
from ledger.pricing import to_usd
from realms.forge import procs

log = logging.getLogger("ledger.spend")

RELEASED = "reservation_released"


@dataclass(frozen=True)
class Released:
    realm_id: str
    agent_id: str
    nusd: int


def release_orphans(realm_id: str | None = None) -> list[Released]:
    """Release every reservation (of the realm, or of any realm) held by a dead gateway
    process of this host; what was released."""
    held = VirtualKey.objects.filter(reserved_nusd__gt=0).exclude(reserved_by="")
    if realm_id is not None:
        held = held.filter(realm_id=realm_id)
    released: list[Released] = []
    rows = held.values_list("id", "realm_id", "agent_id", "reserved_nusd", "reserved_by")
    for key_id, realm, agent, amount, holder in rows:
        if procs.identity_alive(holder) is not False:  # alive, or another host's
            continue
        with transaction.atomic():
            # Only as read: a live gateway that reserved on the key since is its holder now.
            done = VirtualKey.objects.filter(
                pk=key_id, reserved_by=holder, reserved_nusd=amount
            ).update(reserved_nusd=0, reserved_by="")
            if not done:
                continue
            record_event(
                realm,
                Kind.SYSTEM,
                {
                    "event": RELEASED,
                    "agent": agent,
                    "usd": float(to_usd(amount)),
                    "reason": "the gateway that held it stopped before its call was answered;"
                    " that call's cost is unknown and not counted",
                },
            )
        log.warning("released %d n$ that a stopped gateway held for %s/%s", amount, realm, agent)
        released.append(Released(realm, agent, amount))
    return released
