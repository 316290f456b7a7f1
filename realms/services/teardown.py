"""The teardown of a realm that ends: concluded, interrupted, or failed while provisioning.

In order: kill the background jobs → stop the sandboxes → revoke the keys → wait for the
calls still in flight to settle (so the report's spend and the recording are whole) →
ingest the last traces → capture the declared outputs (one OUTPUT event per file) → release the
sandboxes → read the bus back → close the bus. Every step is idempotent, so a teardown
a crash cut short can run again. A step that fails is chronicled as ``teardown_error``
(its step and what went wrong) and never keeps the next ones from running.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from chronicle.kinds import Kind, Lifecycle
from chronicle.services import record_event
from ledger.services.keys import revoke_realm_keys, wait_settled
from ledger.services.orphans import release_orphans
from realms.forge.outputs import capture_outputs
from realms.forge.services import release_realm, released_marker, stop_realm_sandboxes
from realms.herald.bus import teardown_bus
from realms.herald.reconcile import reconcile
from realms.models import Realm
from realms.plan import plan_of
from realms.realmtools.jobs import stop_realm_jobs
from realms.services import traces

log = logging.getLogger(__name__)

STEPS = (
    "stop jobs",
    "stop sandboxes",
    "revoke keys",
    "settle calls",
    "ingest traces",
    "capture outputs",
    "release sandboxes",
    "reconcile bus",
    "close bus",
)
#: What only the host holding the sandboxes can do; a surviving host concluding a dead
#: host's realm skips them, and the dead host reaps its sandboxes when it comes back.
HOST_LOCAL_STEPS = frozenset(
    {"stop sandboxes", "ingest traces", "capture outputs", "release sandboxes"}
)


# A call its agent left behind is answered within seconds on a hosted model; one still
# open after this long is chronicled as missing from the report, never waited out.
SETTLE_WAIT_S = 30.0


class Unsettled(Exception):
    """Calls of the realm were still in flight when the teardown stopped waiting."""


def _settle(realm_id: str) -> None:
    # A call whose gateway was killed will never settle: its reservation is let go (and
    # chronicled) rather than waited for.
    release_orphans(realm_id)
    left = wait_settled(realm_id, SETTLE_WAIT_S)
    if left:
        raise Unsettled(
            f"{left} agent(s) still had a model call in flight after {SETTLE_WAIT_S:.0f} s; "
            "the Ledger meters it when it ends, but this report's spend leaves it out"
        )


def step(realm_id: str, what: str, call: Callable[[], Any]) -> Any:
    """Run one step; on failure chronicle ``teardown_error`` and return None."""
    try:
        return call()
    except Exception as exc:
        log.warning("teardown of %s: %s failed: %s", realm_id, what, exc)
        with transaction.atomic():
            record_event(
                realm_id,
                Kind.LIFECYCLE,
                {
                    "event": Lifecycle.TEARDOWN_ERROR,
                    "step": what,
                    "detail": f"{type(exc).__name__}: {exc}"[:500],
                },
            )
        return None


def _declared_outputs(realm_id: str) -> list[str]:
    realm = Realm.objects.filter(realm_id=realm_id).first()
    return list(plan_of(realm).outputs) if realm else []


def _capture(realm_id: str) -> None:
    if released_marker(realm_id).exists():
        # A teardown run again after a crash: the shared folder is gone and what it held
        # was captured (and chronicled) the first time.
        return
    entries = capture_outputs(realm_id, _declared_outputs(realm_id))
    with transaction.atomic():
        for entry in entries:
            record_event(realm_id, Kind.OUTPUT, entry)


def tear_down(realm_id: str, why: str, *, local: bool = True) -> None:
    """Run every step in order; ``why`` is what the stopped sandboxes are told.
    ``local=False``: the sandboxes are on another (dead) host; only the shared steps run."""
    calls: dict[str, Callable[[], Any]] = {
        # Background jobs run beside the sandboxes, in the realmtools process.
        "stop jobs": lambda: stop_realm_jobs(realm_id),
        "stop sandboxes": lambda: stop_realm_sandboxes(realm_id, why),
        "revoke keys": lambda: revoke_realm_keys(realm_id),
        "settle calls": lambda: _settle(realm_id),
        "ingest traces": lambda: traces.ingest_all(realm_id, drain=True),
        # Releasing deletes the shared folder: what the package declared is kept first.
        "capture outputs": lambda: _capture(realm_id),
        "release sandboxes": lambda: release_realm(realm_id),
        # Messages whose push a homeserver crash lost are read back before the rooms
        # close, so the transcript and report are complete.
        "reconcile bus": lambda: reconcile(realm_id),
        "close bus": lambda: teardown_bus(realm_id),
    }
    for what in STEPS:
        if local or what not in HOST_LOCAL_STEPS:
            step(realm_id, what, calls[what])
