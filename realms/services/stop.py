"""The kill switch as the API pulls it: only on a realm that has not ended yet.

A realm that ended (or is ending) cannot be stopped any more; saying "stop requested"
to it would be a false success, so the caller hears why instead.
"""

from __future__ import annotations

from realms.models import Realm

_OVER = (*Realm.TERMINAL_STATES, Realm.State.CONCLUDING)


class AlreadyOver(Exception):
    """The realm has ended or is concluding; nothing was changed."""


def stop_live_realm(realm_id: str) -> None:
    """Set the row's stop flag, which the Warden reads each tick; raises AlreadyOver
    (and changes nothing) for a realm that ended, is concluding, or has no row to stop."""
    live = Realm.objects.filter(realm_id=realm_id).exclude(state__in=_OVER)
    if live.update(stop_requested=True):
        return
    state = Realm.objects.filter(realm_id=realm_id).values_list("state", flat=True).first()
    if state is None:
        raise AlreadyOver(f"realm {realm_id!r} is only in the Chronicle: it has ended")
    raise AlreadyOver(f"realm {realm_id!r} is already {state}: there is nothing to stop")
