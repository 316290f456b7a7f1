"""``bearpit.queue.enqueue``: a task queued by name runs only once its transaction commits.

Without a broker (the test settings, like the embedded default) the task runs in this
process, where Celery's own ``send_task`` would publish it to a transport nobody reads.
"""

from __future__ import annotations

import pytest
from django.db import transaction

from bearpit.celery import app
from bearpit.queue import enqueue

ran: list[tuple[str, int]] = []


@app.task(name="tests.queue.note")
def note(word: str, number: int) -> None:
    ran.append((word, number))


@pytest.fixture(autouse=True)
def _empty() -> None:
    ran.clear()


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_task_runs_at_once() -> None:
    assert app.conf.task_always_eager
    enqueue("tests.queue.note", "now", 1)
    assert ran == [("now", 1)]


@pytest.mark.django_db(transaction=True)
def test_inside_a_transaction_the_task_waits_for_the_commit() -> None:
    with transaction.atomic():
        enqueue("tests.queue.note", "later", 2)
        assert ran == []
    assert ran == [("later", 2)]


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_transaction_queues_nothing() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        enqueue("tests.queue.note", "never", 3)
        raise RuntimeError("roll back")
    assert ran == []


@pytest.mark.django_db(transaction=True)
def test_a_task_of_an_app_is_found_without_its_module_imported_first() -> None:
    # realms.tasks is imported by a worker at start; a process that never imported it
    # still runs a task queued by name (a realm that does not exist: it returns quietly).
    enqueue("warden.conclude", "no-such-realm")
    assert "warden.conclude" in app.tasks
