"""What the API, ``pit_realms --hosts`` and the console show of the worker hosts."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from realms.models import Host, Realm


def host_rows() -> list[dict[str, Any]]:
    """Every known host: id, state, backend, load (live realms) / capacity, heartbeat age."""
    now = timezone.now()
    live = ~Q(realms__state__in=Realm.TERMINAL_STATES) & Q(realms__isnull=False)
    rows = Host.objects.annotate(load=Count("realms", filter=live)).order_by("host_id")
    return [
        {
            "host_id": host.host_id,
            "state": host.state,
            "backend": host.backend,
            "capacity": host.capacity,
            "load": host.load,
            "last_heartbeat": host.last_heartbeat.isoformat(),
            "heartbeat_age_s": round((now - host.last_heartbeat).total_seconds(), 1),
            "realms": list(
                host.realms.exclude(state__in=Realm.TERMINAL_STATES)
                .order_by("created_at")
                .values_list("realm_id", flat=True)
            ),
        }
        for host in rows
    ]
