"""What the home page shows of the realms: the live ones with their counters, and the
newest runs, read through the same status and run-history functions as the API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from chronicle import selectors
from chronicle.kinds import Kind
from realms.api.status import is_active, realm_status, run_history
from realms.models import Realm, RealmAgent

RECENT_RUNS = 10


@dataclass(frozen=True)
class LiveRealm:
    realm_id: str
    scenario: str
    state: str
    agents: int
    agents_in: int
    messages: int
    spend: float
    round: int | None
    host: str | None = None  # the worker host running it (none in the embedded default)


@dataclass(frozen=True)
class Overview:
    live: list[LiveRealm]
    runs: list[dict[str, Any]]
    active: int
    capacity: int
    any_run: bool

    @property
    def full(self) -> bool:
        return self.active >= self.capacity

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.active / self.capacity)) if self.capacity else 100


def current_round(realm_id: str) -> int | None:
    """The round the latest turn event names (none before the floor opens)."""
    latest = selectors.events(realm_id, Kind.TURN).order_by("-ts_ms", "-id").first()
    value = latest.payload.get("round") if latest is not None else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _live(realm: Realm) -> LiveRealm:
    status = realm_status(realm.realm_id)
    agents = RealmAgent.objects.filter(realm=realm).count()
    return LiveRealm(
        realm_id=realm.realm_id,
        scenario=realm.package_name,
        state=str(status["state"]),
        agents=agents,
        agents_in=max(agents - len(selectors.agents_out(realm.realm_id)), 0),
        messages=int(status["messages"]),
        spend=float(status["total_spend"]),
        round=current_round(realm.realm_id),
        host=realm.host_id,
    )


def overview() -> Overview:
    """Realms something still drives (at most about the capacity, a handful of queries
    each) and recent runs; a realm whose driver is gone shows among the runs."""
    rows = Realm.objects.exclude(state__in=Realm.TERMINAL_STATES).order_by("-created_at", "-id")
    driven = [r for r in rows.defer("project", "run_config", "parameters") if is_active(r)]
    live = [_live(r) for r in driven]
    history = run_history(scenario=None, limit=RECENT_RUNS)
    live_ids = {r.realm_id for r in live}
    return Overview(
        live=live,
        runs=[r for r in history["runs"] if r["realm_id"] not in live_ids],
        active=int(history["active"]),
        capacity=int(settings.BEARPIT_MAX_ACTIVE_REALMS),
        any_run=bool(live or history["runs"]),
    )
