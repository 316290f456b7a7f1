"""The batches pages through Django's test client: a batch started from a scenario's
form queues its first runs and goes to its page; bad input is refused beside its field
and starts nothing; unknown batches and scenarios are 404; a browser without the
operator's session sees nothing. And the batch moves on with nobody reading it: the
beat task Celery runs (and pit_serve's driver calls the same function) queues the next
run, and leaves a pit_batch process's own batch alone."""

from __future__ import annotations

import html
import queue
from pathlib import Path

import pytest
from django.conf import settings

from bearpit.celery import app
from chronicle.kinds import Kind
from ledger.services.profiles import seed_profiles
from realms.batch.service import BatchRequest, advance_batch, create_batch, record_realm
from realms.batch.stats import wilson
from realms.library import services as library
from realms.models import Batch, Realm
from realms.services.conclude import interrupt_realm
from tests.chronicle.realmkit import event
from tests.fixtures.realms import build_realm
from tests.realms.api.conftest import drained

# The hand-off to the worker happens when the launch commits: real transactions.
pytestmark = [pytest.mark.timeout(90), pytest.mark.django_db(transaction=True)]

PACKAGE = Path(__file__).resolve().parents[1] / "realms" / "batch" / "packages" / "two-endings"


@pytest.fixture
def scenario(settings, tmp_path) -> str:
    settings.BEARPIT_HOME = tmp_path / "home"
    seed_profiles()
    library.import_folder(PACKAGE)
    return "two-endings"


def start(operator, **fields: str):
    body = {"n": "2", "concurrency": "1", "param-ending": "win", **fields}
    return operator.post("/scenarios/two-endings/batch", body)


def test_a_browser_without_the_operator_session_sees_nothing(client, scenario, local_worker):
    batch = create_batch(BatchRequest(package=PACKAGE, count=1))
    for url in ("/batches/", f"/batches/{batch.batch_id}/", f"/batches/{batch.batch_id}/live"):
        assert client.get(url).status_code == 403, url
    assert client.get("/scenarios/two-endings/batch").status_code == 403
    assert client.post("/scenarios/two-endings/batch", {"n": "2"}).status_code == 403
    assert Batch.objects.count() == 1 and drained(local_worker) == []


def test_a_batch_started_from_the_form_queues_its_first_run_and_shows_its_page(
    operator, scenario, local_worker: queue.Queue[str]
):
    form = operator.get("/scenarios/two-endings/batch").content.decode()
    assert 'name="n"' in form and 'name="param-ending"' in form and 'name="provider"' in form
    answer = start(operator)
    assert answer.status_code == 302, answer.content.decode()
    batch = Batch.objects.get()
    assert answer["Location"] == f"/batches/{batch.batch_id}/"
    assert batch.background and batch.count == 2 and batch.concurrency == 1
    first = batch.runs[0]["realm_id"]
    assert drained(local_worker) == [first] and batch.runs[1]["realm_id"] is None
    assert Realm.objects.get(realm_id=first).parameters == {"ending": "win"}

    page = operator.get(answer["Location"]).content.decode()
    assert "0 of 2 runs ended" in page and f'href="/realms/{first}/"' in page
    assert f'hx-get="/batches/{batch.batch_id}/live"' in page  # polls while it runs
    live = operator.get(f"/batches/{batch.batch_id}/live").content.decode()
    assert "<html" not in live and 'id="batch-report"' in live
    listing = operator.get("/batches/").content.decode()
    assert f'href="/batches/{batch.batch_id}/"' in listing and "two-endings" in listing
    assert 'href="/scenarios/two-endings/batch"' in listing
    # Reading the pages queued nothing.
    assert drained(local_worker) == []


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"n": "0"}, "n", "greater than or equal to 1"),
        ({"n": "two"}, "n", "whole number"),
        ({"concurrency": "3"}, "concurrency", "at most the number of runs"),
        ({"param-ending": "draw"}, "param-ending", "draw"),
        ({"grid": "ending=win,draw"}, "grid", "draw"),
        ({"grid": "colour=red"}, "grid", "no such parameter"),
        ({"intended": "victory"}, "intended", "unknown termination kind"),
    ],
)
def test_bad_input_is_refused_beside_its_field_and_starts_nothing(
    operator, scenario, local_worker, fields, field, words
):
    answer = start(operator, **fields)
    assert answer.status_code == 400, answer.content.decode()
    page = answer.content.decode()
    assert f'id="id_{field}_error"' in page, page
    error = page.split(f'id="id_{field}_error">', 1)[1].split("</span>", 1)[0]
    assert words in error, error
    assert Batch.objects.count() == 0 and Realm.objects.count() == 0
    assert drained(local_worker) == []


def test_unknown_batches_and_scenarios_are_404(operator, scenario):
    assert operator.get("/batches/batch-nope-000000/").status_code == 404
    assert operator.get("/batches/not%20a%20batch/live").status_code == 404
    assert operator.get("/scenarios/no-such-thing/batch").status_code == 404


def test_the_batch_moves_on_with_nobody_reading_it(operator, scenario, local_worker):
    assert settings.CELERY_BEAT_SCHEDULE["batches-advance-all"]["task"] == "batches.advance_all"
    assert start(operator).status_code == 302
    batch = Batch.objects.get()
    first = drained(local_worker)[0]
    # pit_batch's own batch (not the server's) is never driven by the server.
    own = create_batch(BatchRequest(package=PACKAGE, count=1, parameters={"ending": "win"}))

    interrupt_realm(first, "the worker stopped")
    # Reading the batch's pages drives nothing.
    for url in ("/batches/", f"/batches/{batch.batch_id}/", f"/batches/{batch.batch_id}/live"):
        assert operator.get(url).status_code == 200
    batch.refresh_from_db()
    assert batch.runs[0]["realm_id"] == first and drained(local_worker) == []

    app.loader.import_default_modules()
    app.tasks["batches.advance_all"].apply(throw=True)

    batch.refresh_from_db()
    rerun = batch.runs[0]["realm_id"]
    assert batch.runs[0]["replaced"] == [first] and rerun not in (first, None)
    assert drained(local_worker) == [rerun]
    own.refresh_from_db()
    assert own.runs[0]["realm_id"] is None


def test_a_finished_batch_shows_k_of_n_with_its_interval(operator, scenario):
    batch = create_batch(BatchRequest(package=PACKAGE, count=2, grid={"ending": ["win", "lose"]}))
    for index, kind in enumerate(("message", "duration")):
        realm = build_realm(f"ended-{index}-abc123", state=Realm.State.ARCHIVED)
        event(realm.realm_id, Kind.LIFECYCLE, {"event": "concluding", "reason": kind}, 2_000)
        record_realm(batch.batch_id, index, realm.realm_id)
    assert advance_batch(batch.batch_id, 10).state == "finished"

    page = html.unescape(operator.get(f"/batches/{batch.batch_id}/").content.decode())
    interval = wilson(1, 2)
    low, high = interval.low, interval.high
    assert "1 of 2</strong> reached the intended ending: <strong>50%</strong>" in page
    assert f"95% interval (Wilson) <strong>{low:.0%} to {high:.0%}</strong>" in page
    assert "hx-trigger" not in page  # nothing left to poll for
    assert 'href="/realms/ended-0-abc123/"' in page and 'href="/realms/ended-1-abc123/"' in page
    assert "<code>ending=win</code>" in page and "<code>duration</code>" in page
    listing = html.unescape(operator.get("/batches/").content.decode())
    assert f'1 of 2</strong> <span class="small">({low:.0%} to {high:.0%}' in listing
