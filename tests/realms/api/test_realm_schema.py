"""What the realm routes answer matches what the OpenAPI schema says they answer."""

from __future__ import annotations

import pytest

from chronicle.kinds import Kind
from realms.models import Realm
from tests.chronicle.realmkit import event, running, say
from tests.fixtures.realms import build_realm

from .conftest import check_answer as _check

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

REALM = "schema-abc123"


def test_every_json_answer_matches_its_schema(routes_api, openapi, local_worker):
    build_realm(
        REALM,
        agents=[{"id": "alice"}, {"id": "ref", "role": "referee"}],
        state=Realm.State.ARCHIVED,
    )
    running(REALM, ts=1_000, config={"provider": "offline"})
    say(REALM, "hello", 1_100, agent="alice")
    event(REALM, Kind.SPEND, {"agent": "alice", "usd": 0.5, "tokens_in": 3, "tokens_out": 1}, 1_200)
    event(REALM, Kind.VERDICT, {"outcome": "alice", "scoreboard": {"alice": 2}}, 1_300)
    event(REALM, Kind.LIFECYCLE, {"event": "concluding", "reason": "referee_verdict"}, 1_400)
    event(REALM, Kind.LIFECYCLE, {"event": "archived"}, 1_500)
    base = "/api/realms/{realm_id}"
    for path, url, status in (
        ("/api/realms", "/api/realms", 200),
        (base, f"/api/realms/{REALM}", 200),
        (f"{base}/transcript", f"/api/realms/{REALM}/transcript", 200),
        (f"{base}/events", f"/api/realms/{REALM}/events", 200),
        (f"{base}/outputs", f"/api/realms/{REALM}/outputs", 200),
        ("/api/runs", "/api/runs", 200),
        (base, "/api/realms/nobody-000000", 404),
    ):
        response = routes_api.get(url)
        assert response.status_code == status, (url, response.content)
        _check(openapi, path, "get", status, response.json())

    stop = routes_api.post(f"/api/realms/{REALM}/stop")
    assert stop.status_code == 409
    _check(openapi, f"{base}/stop", "post", 409, stop.json())
    rerun = routes_api.post(f"/api/realms/{REALM}/rerun")
    assert rerun.status_code == 202, rerun.content
    _check(openapi, f"{base}/rerun", "post", 202, rerun.json())
    new = rerun.json()["realm_id"]
    live_stop = routes_api.post(f"/api/realms/{new}/stop")
    _check(openapi, f"{base}/stop", "post", 202, live_stop.json())
    for status_body in (routes_api.get(f"/api/realms/{new}").json(),):
        _check(openapi, base, "get", 200, status_body)
