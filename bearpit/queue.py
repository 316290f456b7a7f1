"""Queue a Celery task by its name once the current transaction commits.

Services enqueue through here rather than importing task functions: tasks sit above
the services (they call them), so a service that imported one would point upwards.
A task queued inside a transaction that rolls back is never sent.

Without a broker (``task_always_eager``, the embedded default) Celery's
``send_task`` ignores the eager setting and publishes to the in-memory transport,
where nothing ever reads it; the registered task is run in this process instead.
"""

from __future__ import annotations

from django.db import transaction


def enqueue(name: str, *args: object) -> None:
    """Send task ``name`` with ``args`` after commit (at once outside a transaction)."""
    payload = tuple(args)

    def send() -> None:
        from bearpit.celery import app  # imported on first use: Celery is slow to import

        if app.conf.task_always_eager:
            if name not in app.tasks:
                # Only a worker imports every app's tasks module at start.
                app.loader.import_default_modules()
            app.tasks[name].apply(args=payload, throw=True)
        else:
            app.send_task(name, args=list(payload))

    transaction.on_commit(send)
