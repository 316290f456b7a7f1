from __future__ import annotations

import datetime as dt
import json
import stat

import pytest
from django.utils import timezone

from bearpit import auth
from chronicle import selectors
from chronicle.kinds import Kind
from realms.models import Realm
from tests.chronicle.realmkit import COMMONS, event, running, say
from tests.fixtures.realms import build_realm

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]

TOKEN = "test-operator-token-0123456789"
REALM = "arena-abc123"
SECRETS = ("syt_agent_matrix_secret", "sk-virtual-key-secret", "rt.signed-token-secret")


@pytest.fixture(autouse=True)
def _settings(settings, tmp_path):
    settings.BEARPIT_HOME = tmp_path
    settings.BEARPIT_API_TOKEN = TOKEN


@pytest.fixture
def api(client):
    class Api:
        def get(self, path, **kw):
            return client.get(path, HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **kw)

        def post(self, path, data=None, **kw):
            return client.post(
                path,
                data=json.dumps(data or {}),
                content_type="application/json",
                HTTP_AUTHORIZATION=f"Bearer {TOKEN}",
                **kw,
            )

    return Api()


def build_arena(**fields) -> Realm:
    realm = build_realm(
        REALM,
        agents=[{"id": "umpire", "role": "referee"}, {"id": "alice"}, {"id": "bob"}],
        name="Arena",
        state=fields.pop("state", Realm.State.RUNNING),
        **fields,
    )
    event(REALM, Kind.LIFECYCLE, {"event": "provisioning"}, 500)
    running(
        REALM,
        ts=1_000,
        config={
            "provider": "offline",
            "agents": [{"id": "alice", "budget_usd": 1.0}],
            "api_key": SECRETS[1],
        },
    )
    say(REALM, "hello", 1_100, agent="alice")
    say(REALM, "hi", 1_200, agent="bob")
    event(
        REALM,
        Kind.SPEND,
        {"agent": "alice", "usd": 0.25, "tokens_in": 100, "tokens_out": 20},
        1_300,
    )
    event(REALM, Kind.SCORE, {"agent": "alice", "delta": 3, "reason": "won"}, 1_400)
    event(REALM, Kind.VIOLATION, {"agent": "bob", "reason": "spoke twice"}, 1_500)
    event(
        REALM,
        Kind.EXEC_RESULT,
        {"agent": "bob", "exit_code": 0, "output": "ok", "access_token": SECRETS[0]},
        1_600,
    )
    event(REALM, Kind.SYSTEM, {"event": "nudge", "n": 1, "token": SECRETS[2]}, 1_700)
    return realm


# --- authentication -------------------------------------------------------------


def test_every_route_needs_the_token(client):
    build_arena()
    for path in (
        "/api/realms",
        f"/api/realms/{REALM}",
        f"/api/realms/{REALM}/transcript",
        f"/api/realms/{REALM}/events",
        f"/api/realms/{REALM}/report",
    ):
        response = client.get(path)
        assert response.status_code == 401, path
        assert response["WWW-Authenticate"].startswith("Bearer")
        assert client.get(path, HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    for path in (f"/api/realms/{REALM}/stop", f"/api/realms/{REALM}/msg"):
        assert client.post(path).status_code == 401
    assert not Realm.objects.get(realm_id=REALM).stop_requested


def test_the_token_is_accepted_as_bearer_never_in_the_url(client):
    build_arena()
    assert client.get("/api/realms", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 200
    assert client.get(f"/api/realms?token={TOKEN}").status_code == 400
    assert client.get("/api/realms?token=nope").status_code == 400
    assert client.get("/api/realms", HTTP_AUTHORIZATION=f"Bearer {TOKEN}x").status_code == 401


def test_a_generated_token_is_kept_private_and_stable(settings, tmp_path, client):
    settings.BEARPIT_API_TOKEN = None
    token = auth.api_token()
    path = tmp_path / "api-token"
    assert path.read_text().strip() == token and len(token) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert auth.api_token() == token
    assert client.get("/api/realms", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200
    assert client.get("/api/realms", HTTP_AUTHORIZATION=f"Bearer {TOKEN}").status_code == 401


def test_cross_site_writes_are_refused(client):
    build_arena()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {TOKEN}"}
    stop = f"/api/realms/{REALM}/stop"
    assert client.post(stop, HTTP_ORIGIN="https://evil.example", **headers).status_code == 403
    assert client.post(stop, HTTP_SEC_FETCH_SITE="cross-site", **headers).status_code == 403
    assert not Realm.objects.get(realm_id=REALM).stop_requested
    assert client.post(stop, HTTP_ORIGIN="http://testserver", **headers).status_code == 202


def test_the_host_allowlist_applies(client):
    response = client.get(
        "/api/realms", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", HTTP_HOST="attacker.example"
    )
    assert response.status_code == 400


# --- routes ---------------------------------------------------------------------


def test_list_realms(api):
    build_realm("older-abc123", state=Realm.State.ARCHIVED)
    build_arena()
    body = api.get("/api/realms").json()
    assert body["realms"][0] == {
        "realm_id": REALM,
        "state": "running",
        "active": True,
        "host": None,  # placed by no worker host: this test's realm was made directly
    }
    older = {"realm_id": "older-abc123", "state": "archived", "active": False, "host": None}
    assert older in body["realms"]
    assert body["active"] == 1 and body["capacity"] >= 1


def test_status_of_a_running_realm(api):
    build_arena()
    body = api.get(f"/api/realms/{REALM}").json()
    assert body["realm_id"] == REALM
    assert body["state"] == "running" and body["active"] is True
    assert body["outcome"] is None
    assert body["spend"] == {"alice": 0.25} and body["total_spend"] == 0.25
    assert body["tokens"] == {"alice": {"in": 100, "out": 20}} and body["total_tokens"] == 120
    assert body["scores"] == {"alice": 3.0} and body["score_discrepancy"] is False
    assert body["violations"] == [{"agent": "bob", "reason": "spoke twice"}]
    # seven chronicled here, and the TOOL_MANIFEST the launch recorded
    assert body["messages"] == 2 and body["events"] == 8
    assert body["config"]["provider"] == "offline"
    assert body["error"] is None


def test_status_prefers_the_verdicts_scoreboard_and_flags_a_mismatch(api):
    build_arena()
    event(REALM, Kind.VERDICT, {"outcome": "alice", "scoreboard": {"alice": 4}}, 2_000)
    body = api.get(f"/api/realms/{REALM}").json()
    assert body["outcome"] == "alice"
    assert body["scores"] == {"alice": 4} and body["score_ledger"] == {"alice": 3.0}
    assert body["score_discrepancy"] is True


@pytest.mark.parametrize(
    ("row_state", "claim_age_s", "expected"),
    [
        (Realm.State.RUNNING, None, "running"),
        (Realm.State.RUNNING, 5, "running"),
        (Realm.State.RUNNING, 3600, "interrupted"),  # the worker's claim lapsed long ago
        (Realm.State.ARCHIVED, None, "interrupted"),  # nothing drives it any more
        (Realm.State.FAILED, None, "failed"),
    ],
)
def test_state_rewrites(api, row_state, claim_age_s, expected):
    claimed = None
    if claim_age_s is not None:
        claimed = timezone.now() - dt.timedelta(seconds=claim_age_s)
    build_arena(state=row_state, claimed_until=claimed)
    assert api.get(f"/api/realms/{REALM}").json()["state"] == expected


def test_a_terminal_chronicled_state_is_shown_as_is(api):
    build_arena(state=Realm.State.ARCHIVED)
    event(REALM, Kind.LIFECYCLE, {"event": "archived"}, 3_000)
    body = api.get(f"/api/realms/{REALM}").json()
    assert body["state"] == "archived" and body["active"] is False


def test_unknown_realms_are_404(api):
    for path in ("", "/transcript", "/events", "/report"):
        assert api.get(f"/api/realms/nobody-000000{path}").status_code == 404
    assert api.post("/api/realms/nobody-000000/stop").status_code == 404
    assert api.post("/api/realms/nobody-000000/msg", {"text": "hi"}).status_code == 404


def test_transcript_route(api):
    build_arena()
    body = api.get(f"/api/realms/{REALM}/transcript?limit=1").json()
    assert body["channels"][COMMONS] == "commons"
    assert body["messages"] == [{"ts": 1_200, "channel": COMMONS, "sender": "bob", "body": "hi"}]
    assert len(api.get(f"/api/realms/{REALM}/transcript").json()["messages"]) == 2
    bad = api.get(f"/api/realms/{REALM}/transcript?limit=lots")
    assert bad.status_code == 400 and "limit" in bad.json()
    assert api.get(f"/api/realms/{REALM}/transcript?limit=0").status_code == 400


def test_events_route_filters_by_kind_and_keeps_the_latest(api):
    build_arena()
    all_events = api.get(f"/api/realms/{REALM}/events").json()["events"]
    assert [e["kind"] for e in all_events][:2] == ["lifecycle", "lifecycle"]
    assert len(all_events) == 8  # with the launch's TOOL_MANIFEST
    lifecycle = api.get(f"/api/realms/{REALM}/events?kind=lifecycle&limit=1").json()["events"]
    assert lifecycle == [
        {
            "ts": 1_000,
            "kind": "lifecycle",
            "payload": lifecycle[0]["payload"],
        }
    ]
    assert lifecycle[0]["payload"]["event"] == "running"


def test_report_is_markdown_never_html(api):
    build_arena()
    event(REALM, Kind.VERDICT, {"outcome": "<script>alert(1)</script>"}, 2_000)
    response = api.get(f"/api/realms/{REALM}/report")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    text = response.content.decode()
    assert text.startswith("# Arena — final report\n")
    assert "**Outcome:** <script>alert(1)</script>" in text


def test_stop_sets_the_rows_flag(api):
    build_arena()
    response = api.post(f"/api/realms/{REALM}/stop")
    assert response.status_code == 202 and response.json()["stop_requested"] is True
    assert Realm.objects.get(realm_id=REALM).stop_requested


def test_msg_without_a_bus_is_recorded_and_refused_clearly(api):
    build_arena()
    response = api.post(f"/api/realms/{REALM}/msg", {"text": "  please wrap up  ", "to": "alice"})
    assert response.status_code == 503
    body = response.json()
    assert body["delivered"] is False and body["recorded"] is True
    assert "no message bus" in body["error"]
    recorded = [
        p for p in selectors.payloads(REALM, Kind.SYSTEM) if p["event"] == "operator_message"
    ]
    assert recorded == [
        {
            "event": "operator_message",
            "text": "please wrap up",
            "to": "alice",
            "delivered": False,
            "reason": "the realm has no message bus (not provisioned, or torn down)",
        }
    ]


def test_msg_bad_input_changes_nothing(api):
    build_arena()
    before = selectors.event_count(REALM)
    for data in ({}, {"text": "   "}, {"text": "hi", "to": "mallory"}, {"text": "hi", "to": 5}):
        response = api.post(f"/api/realms/{REALM}/msg", data)
        assert response.status_code == 400, data
    assert (
        "mallory"
        in api.post(f"/api/realms/{REALM}/msg", {"text": "x", "to": "mallory"}).json()["to"]
    )
    assert selectors.event_count(REALM) == before


def test_no_response_carries_a_secret(api):
    build_arena()
    bodies = [
        api.get(path).content.decode()
        for path in (
            "/api/realms",
            f"/api/realms/{REALM}",
            f"/api/realms/{REALM}/transcript",
            f"/api/realms/{REALM}/events",
            f"/api/realms/{REALM}/report",
        )
    ]
    for body in bodies:
        for secret in SECRETS:
            assert secret not in body
    events = api.get(f"/api/realms/{REALM}/events?kind=exec_result").json()["events"]
    assert events[0]["payload"]["access_token"] == "[redacted]"
    assert events[0]["payload"]["output"] == "ok"
    assert TOKEN not in "".join(bodies)
