"""Bounded fuzzing of the API's JSON bodies: whatever arrives, the answer is a JSON 4xx.

Random JSON documents (with NULs, lone surrogates, deep nesting, huge numbers) and raw
bytes go to every route that takes a body; none may answer 500 or HTML.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronicle.kinds import Kind
from chronicle.services import record_event
from realms.models import Realm

pytestmark = [pytest.mark.timeout(300), pytest.mark.django_db]

TOKEN = "test-operator-token-fuzz-0123"
ROUTES = ["/api/realms", "/api/realms/r-fuzz/msg", "/api/realms/r-fuzz/stop"]

_text = st.text(alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF))
_scalars = st.none() | st.booleans() | st.integers() | st.floats() | _text
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=30,
)
_launch_keys = st.sampled_from(
    ["package", "realm_id", "turns", "parameters", "free_response", "provider", "text", "to"]
)
_shaped = st.dictionaries(_launch_keys, _json, max_size=5)


@pytest.fixture(autouse=True)
def _token(settings):
    settings.BEARPIT_API_TOKEN = TOKEN


def _encode(value: object) -> bytes:
    # ensure_ascii keeps lone surrogates as \ud800 escapes, as any client could send them.
    return json.dumps(value, allow_nan=True).encode()


def _check(client, route: str, body: bytes) -> None:
    response = client.generic(
        "POST", route, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {TOKEN}"
    )
    # 503 is the deliberate answer of an installation without a broker, never a crash.
    assert response.status_code < 500 or response.status_code == 503, (
        route,
        body[:200],
        response.content[:300],
    )
    assert response["Content-Type"].startswith("application/json"), response.content[:200]


_SETTINGS = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@_SETTINGS
@given(st.sampled_from(ROUTES), _shaped | _json)
def test_random_json_bodies_get_a_json_4xx(client, route, value):
    record_event("r-fuzz", Kind.LIFECYCLE, {"event": "running"})
    _check(client, route, _encode(value))
    assert not Realm.objects.exclude(state=Realm.State.PENDING).exists()


_nesting = st.builds(
    lambda n, opener, leaf: (opener * n + leaf + {"[": "]", '{"a":': "}"}[opener] * n).encode(),
    st.integers(0, 5000),
    st.sampled_from(["[", '{"a":']),
    st.sampled_from(["1", '"\\u0000"', "NaN", "1e999", "-0"]),
)


@_SETTINGS
@given(st.sampled_from(ROUTES), st.binary(max_size=200) | _nesting)
def test_random_bytes_and_nesting_get_a_json_4xx(client, route, raw):
    record_event("r-fuzz", Kind.LIFECYCLE, {"event": "running"})
    _check(client, route, raw)


@_SETTINGS
@given(
    st.fixed_dictionaries(
        {"package": st.just("x")},
        optional={
            "turns": st.dictionaries(st.sampled_from(["enabled", "silence_timeout_s"]), _json)
        },
    )
)
def test_random_turns_overrides_get_a_json_4xx(client, body):
    _check(client, "/api/realms", _encode(body))
