"""The server's batch driving: two advances of one batch at once (the driver and a read
of the API, or two Celery workers) queue a run once, not twice, because each moves the
batch under a lock on its row. Real threads against the real database."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from django.db import connection

from ledger.services.profiles import seed_profiles
from realms.batch.service import LibraryBatch, advance_batch, start_library_batch
from realms.library import services as library
from realms.models import Batch, Realm
from realms.services.conclude import interrupt_realm
from tests.realms.api.conftest import drained

pytestmark = [pytest.mark.timeout(90), pytest.mark.django_db(transaction=True)]

PACKAGE = Path(__file__).resolve().parent / "packages" / "two-endings"


def test_two_advances_at_once_queue_a_run_once(settings, tmp_path, local_worker) -> None:
    settings.BEARPIT_HOME = tmp_path / "home"
    seed_profiles()
    library.import_folder(PACKAGE)
    asked = LibraryBatch(name="two-endings", count=2, parameters={"ending": "win"})
    batch = start_library_batch(asked, capacity=10)
    (first,) = drained(local_worker)
    interrupt_realm(first, "the worker stopped")  # run 1 is to run again, once

    gate = threading.Barrier(2)
    errors: list[BaseException] = []

    def advance() -> None:
        try:
            gate.wait()
            advance_batch(batch.batch_id, 10)
        except BaseException as exc:  # reported below, not lost in the thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=advance) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    queued = drained(local_worker)
    assert len(queued) == 1, queued
    batch.refresh_from_db()
    assert batch.runs[0]["realm_id"] == queued[0] and batch.runs[0]["replaced"] == [first]
    assert Realm.objects.count() == 2  # the interrupted realm and its one rerun
    assert Batch.objects.get().runs[1]["realm_id"] is None
