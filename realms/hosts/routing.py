"""The Celery router: a task that touches a realm's sandboxes goes to its host's queue.

Named in ``CELERY_TASK_ROUTES`` by its dotted path, so the Celery app (below every app)
never imports it. A realm with no host (the embedded default, or one not yet placed)
keeps the default, shared queue."""

from __future__ import annotations

from typing import Any

from realms.hosts.registry import host_queue
from realms.models import Realm

#: Tasks whose first argument is a realm id and that stop, start or tear down its sandboxes.
HOST_BOUND = frozenset({"warden.tick", "warden.conclude"})


def route(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **_: Any) -> Any:
    if name not in HOST_BOUND or not args:
        return None
    host_id = Realm.objects.filter(realm_id=args[0]).values_list("host_id", flat=True).first()
    return {"queue": host_queue(host_id)} if host_id else None
