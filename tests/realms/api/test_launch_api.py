"""``POST /api/realms``: launch a library scenario and hand it to a worker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from bearpit.celery import app as celery_app
from ledger.services.profiles import seed_profiles
from realms.library import services as library
from realms.models import Realm
from tests.fixtures.worker import redis_url

pytestmark = [pytest.mark.timeout(60)]

TOKEN = "test-operator-token-launch-0123"
REPO = Path(__file__).resolve().parents[3]
BROKER = redis_url(0)
app: Any = celery_app  # the stubs do not know Celery's fork hook used below


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.BEARPIT_API_TOKEN = TOKEN


@pytest.fixture(autouse=True)
def _profiles(db):
    # Transactional tests empty every table, the seeded provider profiles included.
    seed_profiles()


@pytest.fixture
def broker():
    """A real Redis broker for the duration of a test, emptied before and after."""
    connection = redis.Redis.from_url(BROKER)
    connection.flushdb()
    saved = (app.conf.task_always_eager, app.conf.broker_url)
    app.conf.task_always_eager = False
    app.conf.broker_url = BROKER
    # Drop any broker connections made under the old URL; Celery does the same in a
    # forked worker, and this is its hook for it.
    app._after_fork()
    yield connection
    app.conf.task_always_eager, app.conf.broker_url = saved
    app._after_fork()
    connection.flushdb()


def post(client, body):
    return client.post(
        "/api/realms",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
    )


def queued_tasks(connection) -> list[dict[str, Any]]:
    return [json.loads(raw)["headers"] for raw in connection.lrange("celery", 0, -1)]


@pytest.mark.django_db(transaction=True)
def test_a_launch_creates_the_realm_and_queues_its_provisioning(client, broker):
    library.import_folder(REPO / "examples" / "toolcheck")
    response = post(client, {"package": "toolcheck", "realm_id": "tc-api-1"})
    assert response.status_code == 202, response.content
    assert response.json() == {"realm_id": "tc-api-1", "state": "starting"}
    assert Realm.objects.get(realm_id="tc-api-1").state == Realm.State.PENDING
    tasks = queued_tasks(broker)
    assert [t["task"] for t in tasks] == ["realms.provision"]
    assert "tc-api-1" in tasks[0]["argsrepr"]

    again = post(client, {"package": "toolcheck", "realm_id": "tc-api-1"})
    assert again.status_code == 409
    assert len(queued_tasks(broker)) == 1


@pytest.mark.django_db(transaction=True)
def test_refusals_name_the_reason_and_change_nothing(client, broker, settings, tmp_path):
    root = tmp_path / "needs-city"
    (root / "agents" / "solo").mkdir(parents=True)
    (root / "project.json").write_text(
        json.dumps({"metadata": {"name": "Needs city"}, "spec": {"goals": ["Visit ${city}."]}})
    )
    (root / "agents" / "solo" / "agent.json").write_text(json.dumps({"id": "solo"}))
    library.import_folder(root)

    missing = post(client, {"package": "needs-city"})
    assert missing.status_code == 400
    assert [m["name"] for m in missing.json()["missing"]] == ["city"]

    assert post(client, {"package": "ghost"}).status_code == 404

    settings.BEARPIT_MAX_ACTIVE_REALMS = 0
    full = post(client, {"package": "needs-city", "parameters": {"city": "Oslo"}})
    assert full.status_code == 429
    assert not Realm.objects.exists()
    assert queued_tasks(broker) == []


@pytest.mark.django_db
def test_a_malformed_body_is_refused_field_by_field(client):
    response = post(
        client, {"package": 3, "free_response": "yes", "colour": "red", "parameters": []}
    )
    assert response.status_code == 400
    assert set(response.json()) == {"package", "free_response", "colour", "parameters"}
    assert not Realm.objects.exists()


@pytest.mark.django_db
def test_without_a_broker_the_api_says_to_use_pit_up(client):
    library.import_folder(REPO / "examples" / "toolcheck")
    response = post(client, {"package": "toolcheck"})
    assert response.status_code == 503
    assert "pit_up" in response.json()["error"]
    assert not Realm.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("turns", "field"),
    [
        ({"silence_timeout_s": "abc"}, "turns.silence_timeout_s"),
        ({"silence_timeout_s": None}, "turns.silence_timeout_s"),
        ({"silence_timeout_s": [1]}, "turns.silence_timeout_s"),
        ({"silence_timeout_s": True}, "turns.silence_timeout_s"),
        ({"silence_timeout_s": 0}, "turns.silence_timeout_s"),
        ({"silence_timeout_s": 1e9}, "turns.silence_timeout_s"),
        ({"enabled": "yes"}, "turns.enabled"),
        ({"silence": 5}, "turns.silence"),
    ],
)
def test_a_bad_turns_override_is_a_located_400_and_changes_nothing(client, broker, turns, field):
    library.import_folder(REPO / "examples" / "toolcheck")
    response = post(client, {"package": "toolcheck", "realm_id": "tc-turns", "turns": turns})
    assert response.status_code == 400, response.content
    assert field in response.json(), response.json()
    assert not Realm.objects.exists()
    assert queued_tasks(broker) == []


@pytest.mark.django_db(transaction=True)
def test_a_good_turns_override_is_taken(client, broker):
    library.import_folder(REPO / "examples" / "toolcheck")
    body = {"package": "toolcheck", "realm_id": "tc-turns-ok", "turns": {"silence_timeout_s": 120}}
    assert post(client, body).status_code == 202
    turns = Realm.objects.get(realm_id="tc-turns-ok").project["spec"]["turns"]
    assert turns["silence_timeout_s"] >= 120
