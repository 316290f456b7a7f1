"""Every error the HTTP API answers is JSON with a located message, never an HTML page or
a 500, whatever the body: too deep, too big, not JSON, or characters nothing can store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event
from realms.models import Realm
from tests.conftest import REPO
from tests.fixtures.postgres import migrated_env

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

TOKEN = "test-operator-token-errors-0123"


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.BEARPIT_API_TOKEN = TOKEN


def post(client, path: str, body: str | bytes, content_type: str = "application/json"):
    return client.generic(
        "POST", path, body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )


def error_text(response) -> str:
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    return json.dumps(response.json())


def test_json_nested_100000_deep_is_a_400_that_says_so(client):
    deep = "[" * 100_000 + "]" * 100_000
    response = post(client, "/api/realms", deep)
    assert response.status_code == 400
    assert "nested deeper than" in error_text(response)
    assert not Realm.objects.exists()


def test_moderately_deep_json_is_refused_too(client):
    body = '{"package": "x", "parameters": {"n": ' + "[" * 200 + "]" * 200 + "}}"
    response = post(client, "/api/realms", body)
    assert response.status_code == 400
    assert "nested deeper than" in error_text(response)


def test_a_50_mb_body_is_a_json_413(client):
    body = json.dumps({"package": "x" * (50 * 1024 * 1024)})
    response = post(client, "/api/realms", body)
    assert response.status_code == 413
    assert "larger than" in error_text(response)


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_non_numbers_are_refused(client, literal):
    response = post(client, "/api/realms", '{"package": "x", "parameters": {"n": ' + literal + "}}")
    assert response.status_code == 400
    assert literal.lstrip("-") in error_text(response)


def test_malformed_json_is_a_json_400(client):
    response = post(client, "/api/realms", "{not json")
    assert response.status_code == 400
    assert "JSON" in error_text(response)


@pytest.mark.parametrize(("raw", "what"), [("a\\u0000b", "NUL"), ("a\\ud800b", "surrogate")])
def test_characters_no_store_can_keep_are_refused_where_they_are(client, raw, what):
    body = '{"package": "x", "parameters": {"city": "' + raw + '"}}'
    response = post(client, "/api/realms", body)
    assert response.status_code == 400
    text = error_text(response)
    assert what in text and "parameters.city" in text
    assert not Realm.objects.exists()


def test_an_operator_message_with_a_nul_changes_nothing(client):
    record_event("r-msg", Kind.LIFECYCLE, {"event": "running"})
    response = post(client, "/api/realms/r-msg/msg", '{"text": "hi\\u0000there"}')
    assert response.status_code == 400
    assert "body.text" in error_text(response) and "NUL" in error_text(response)
    assert Event.objects.count() == 1


def test_an_unknown_api_route_is_a_json_404(client):
    response = client.get("/api/no-such-thing", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 404
    assert "/api/no-such-thing" in error_text(response)


def test_an_unsupported_media_type_is_json(client):
    response = post(client, "/api/realms", "package=x", content_type="text/plain")
    assert response.status_code == 415
    error_text(response)


@pytest.mark.parametrize(
    "url",
    [
        "/api/realms/a%00b",
        "/api/realms/x/events?kind=a%00b",
        "/api/packages/a%00b",
        "/api/realms?limit=1%00",
        "/api/realms?x%00=1",
    ],
)
def test_a_nul_in_the_url_is_a_json_400(client, url):
    response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert response.status_code == 400
    assert "NUL" in error_text(response)


@pytest.mark.postgres
def test_a_nul_in_the_url_never_reaches_postgres(tmp_path):
    code = (
        "import django; django.setup();"
        "from django.test import Client;"
        "from django.conf import settings;"
        "settings.BEARPIT_API_TOKEN = 't' * 32;"
        "r = Client().get('/api/realms/a%00b/events?kind=%00',"
        " HTTP_AUTHORIZATION='Bearer ' + 't' * 32);"
        "print(r.status_code, r.content.decode())"
    )
    with migrated_env(tmp_path / "home", "urlnul") as env:
        env["BEARPIT_ALLOWED_HOSTS"] = "testserver"
        run = subprocess.run(
            [sys.executable, "-c", code],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert run.stdout.startswith("400 "), (run.stdout, run.stderr[-2000:])


def test_an_api_json_body_over_its_own_limit_is_a_413(client):
    from bearpit.jsonbody import MAX_JSON_BODY_BYTES

    body = json.dumps({"package": "x" * MAX_JSON_BODY_BYTES})
    response = post(client, "/api/realms", body)
    assert response.status_code == 413
    assert f"larger than {MAX_JSON_BODY_BYTES}" in error_text(response)
