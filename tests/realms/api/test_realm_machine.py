"""``GET /api/realms/{id}/machine?as=SEAT``: the machine as one seat saw it, step by step."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from realms.models import Realm
from realms.realmtools.context import Caller
from realms.realmtools.facts import load_facts
from realms.realmtools.identity import Identity
from realms.realmtools.machine import service
from tests.fixtures.realms import build_realm
from tests.realms.realmtools.machines import AUCTION

from .conftest import check_answer

pytestmark = [pytest.mark.timeout(60), pytest.mark.django_db]

REALM = "auction-abc123"
ROSTER = ("orin", "vela", "zed")


def _caller(agent_id: str) -> Caller:
    role: Literal["referee", "player"] = "referee" if agent_id == "themis" else "player"
    identity = Identity(REALM, agent_id, role, ROSTER, frozenset())
    return Caller(identity, load_facts(REALM))


@pytest.fixture
def auction() -> Realm:
    service.forget()
    realm = build_realm(
        REALM,
        agents=[{"id": a} for a in ROSTER] + [{"id": "themis", "role": "referee"}],
        spec={"mechanics": [{"kind": "state-machine", "machine": AUCTION}]},
        state=Realm.State.RUNNING,
    )
    ref = _caller("themis")
    service.game_set(ref, "lot", "vase")
    service.game_set(ref, "reserve", "ninety-gold")
    service.game_set(ref, "hand", "Ah", owner="orin")
    service.game_set(ref, "hand", "Kd", owner="vela")
    service.game_act(ref, "start", {"first": "vela"})
    service.game_act(_caller("vela"), "pass")
    service.game_act(_caller("zed"), "peek")  # the spy's act, logged for the referee only
    service.game_act(_caller("zed"), "pass")
    return realm


def test_a_seat_sees_each_step_before_and_after_never_the_hidden_state(
    routes_api, auction, openapi
):
    response = routes_api.get(f"/api/realms/{REALM}/machine?as=orin")
    assert response.status_code == 200, response.content
    body = response.json()
    check_answer(openapi, "/api/realms/{realm_id}/machine", "get", 200, body)
    assert (body["realm_id"], body["seat"]) == (REALM, "orin")
    assert body["initial"]["state"] == "open"
    text = json.dumps(body)
    assert "Kd" not in text  # vela's hand, never revealed
    # Referee-only data and its write (a value no timestamp or id can contain).
    assert "ninety-gold" not in text and "reserve" not in text
    assert "peek" not in text  # the referee-only log entry
    steps = body["steps"]
    ops = [(s["entry"] or {}).get("transition") or (s["entry"] or {}).get("key") for s in steps]
    assert ops == ["lot", "hand", "start", "pass", "pass"]
    lot = steps[0]
    assert "lot" not in lot["before"]["data"] and lot["after"]["data"]["lot"] == "vase"
    own = steps[1]
    assert own["before"]["data"]["hand"] == {} and own["after"]["data"]["hand"] == {"orin": "Ah"}
    start = steps[2]
    assert (start["before"]["state"], start["after"]["state"]) == ("open", "bidding")
    assert start["after"]["actor"] == "vela"
    assert body["current"]["actor"] == "orin"
    assert body["current"] == steps[-1]["after"]


def test_the_referee_seat_sees_everything(routes_api, auction):
    body = routes_api.get(f"/api/realms/{REALM}/machine?as=themis").json()
    assert body["current"]["data"]["reserve"] == "ninety-gold"
    assert body["current"]["data"]["hand"] == {"orin": "Ah", "vela": "Kd"}
    assert "peek" in json.dumps(body["steps"])


def test_an_unknown_or_missing_seat_is_a_400(routes_api, auction):
    unknown = routes_api.get(f"/api/realms/{REALM}/machine?as=mallory")
    assert unknown.status_code == 400 and "mallory" in unknown.json()["as"]
    assert "orin" in unknown.json()["as"]
    missing = routes_api.get(f"/api/realms/{REALM}/machine")
    assert missing.status_code == 400 and "as" in missing.json()


def test_a_realm_without_a_machine_is_a_404(routes_api):
    build_realm("plain-abc123", state=Realm.State.RUNNING)
    response = routes_api.get("/api/realms/plain-abc123/machine?as=alice")
    assert response.status_code == 404 and "no state machine" in response.json()["error"]
    assert routes_api.get("/api/realms/nobody-000000/machine?as=alice").status_code == 404
