"""``POST /api/batches`` and ``GET /api/batches/{id}``: a batch of a library scenario
queues its first runs to the worker, refuses bad input with a located 400 and creates
nothing then, and moves on when read: an interrupted run is queued again."""

from __future__ import annotations

import queue
from pathlib import Path
from typing import Any

import pytest

from ledger.services.profiles import seed_profiles
from realms.library import services as library
from realms.models import Batch, Realm
from realms.services.conclude import interrupt_realm
from tests.realms.api.conftest import Api, check_answer, drained

# The hand-off to the worker happens when the launch commits: real transactions.
pytestmark = [pytest.mark.timeout(90), pytest.mark.django_db(transaction=True)]

PACKAGE = Path(__file__).resolve().parents[1] / "batch" / "packages" / "two-endings"


@pytest.fixture
def scenario(routes_api: Api) -> str:
    seed_profiles()
    library.import_folder(PACKAGE)
    return "two-endings"


def test_a_batch_queues_runs_up_to_its_concurrency(
    routes_api: Api, scenario: str, local_worker: queue.Queue[str], openapi: dict[str, Any]
) -> None:
    body = {"package": scenario, "n": 3, "concurrency": 2, "grid": {"ending": ["win", "lose"]}}
    answer = routes_api.post("/api/batches", body)
    assert answer.status_code == 201, answer.content
    data = answer.json()
    check_answer(openapi, "/api/batches", "post", 201, data)
    runs = data["runs"]
    assert [r["parameters"] for r in runs] == [
        {"ending": "win"},
        {"ending": "lose"},
        {"ending": "win"},
    ]
    first, second = runs[0]["realm_id"], runs[1]["realm_id"]
    assert first and second and runs[2]["realm_id"] is None
    assert drained(local_worker) == [first, second]
    assert Realm.objects.get(realm_id=first).parameters == {"ending": "win"}

    # Still two live: reading the batch queues nothing more.
    again = routes_api.get(f"/api/batches/{data['batch_id']}")
    assert again.status_code == 200
    check_answer(openapi, "/api/batches/{batch_id}", "get", 200, again.json())
    assert drained(local_worker) == []

    # A run whose realm was interrupted runs again, under a new realm.
    interrupt_realm(first, "the server stopped")
    moved = routes_api.get(f"/api/batches/{data['batch_id']}").json()
    assert moved["runs"][0]["replaced"] == [first]
    rerun = moved["runs"][0]["realm_id"]
    assert rerun not in (first, None)
    assert drained(local_worker) == [rerun]
    assert moved["state"] == "running"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"package": "two-endings", "n": 0}, "n"),
        ({"package": "two-endings", "n": 2, "concurrency": 0}, "concurrency"),
        ({"package": "two-endings", "n": 2, "grid": {"ending": []}}, "grid"),
        ({"n": 2}, "package"),
    ],
)
def test_bad_input_is_a_located_400(
    routes_api: Api, scenario: str, local_worker: queue.Queue[str], body: dict[str, Any], field: str
) -> None:
    answer = routes_api.post("/api/batches", body)
    assert answer.status_code == 400, answer.content
    assert field in str(answer.json())
    assert Batch.objects.count() == 0
    assert drained(local_worker) == []


def test_a_value_outside_the_choices_refuses_the_whole_batch(
    routes_api: Api, scenario: str, local_worker: queue.Queue[str]
) -> None:
    body = {"package": scenario, "n": 2, "grid": {"ending": ["win", "draw"]}}
    answer = routes_api.post("/api/batches", body)
    assert answer.status_code == 400
    assert answer.json()["error"] == "batch refused"
    assert any("ending" in p and "draw" in p for p in answer.json()["problems"])
    assert Batch.objects.count() == 0
    assert Realm.objects.count() == 0


def test_unknown_batches_and_packages_are_404(routes_api: Api, scenario: str) -> None:
    assert routes_api.get("/api/batches/batch-nope-000000").status_code == 404
    answer = routes_api.post("/api/batches", {"package": "no-such-package", "n": 1})
    assert answer.status_code == 404
    assert "no-such-package" in answer.json()["error"]
