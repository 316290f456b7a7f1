"""Pass-through metering, error mapping, authentication and the realm's end."""

from __future__ import annotations

import contextlib
import json
import time

import httpx
import pytest

from chronicle.models import Event
from ledger.gateway.server import GatewayServer
from ledger.models import Spend, VirtualKey
from ledger.services.keys import revoke_realm_keys
from realms.models import Realm
from tests.fixtures.realms import RealmBuilder
from tests.ledger.conftest import UPSTREAM_SECRET, mint, settled
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]

MSG = [{"role": "user", "content": "hello"}]


def _post(server: GatewayServer, secret: str, **body: object) -> httpx.Response:
    return httpx.post(
        f"{server.url}/chat/completions",
        json={"model": "whatever", "messages": MSG, **body},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    )


def test_passthrough_meters_provider_usage_and_hides_the_provider_key(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-pass", "a", "1", provider="fake", model="ok")
    resp = _post(gateway, secret)
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == "fake reply"
    # The provider got the stored key and our bound on max tokens; the agent's key stayed here.
    assert upstream.auth_headers[-1] == f"Bearer {UPSTREAM_SECRET}"
    assert upstream.requests[-1]["max_tokens"] == 4096
    settled("r-pass")
    spend = Spend.objects.get(realm_id="r-pass")
    assert (spend.tokens_in, spend.tokens_out) == (11, 7)
    assert spend.cost_nusd == 11 * 1000 + 7 * 2000
    key = VirtualKey.objects.get(realm_id="r-pass")
    assert key.spent_nusd == spend.cost_nusd and key.reserved_nusd == 0


def test_passthrough_forwards_tools_and_formats_untouched(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-tools", "a", None, provider="fake", model="ok")
    tools = [
        {
            "type": "function",
            "function": {
                "name": "post_message",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}},
            },
        }
    ]
    extra = {
        "tools": tools,
        "tool_choice": "required",
        "response_format": {"type": "json_object"},
        "max_tokens": 77,
    }
    assert _post(gateway, secret, **extra).status_code == 200
    sent = upstream.requests[-1]
    assert sent["model"] == "ok"  # the key's model, whatever the client named
    assert {k: sent[k] for k in extra} == extra


def test_passthrough_stream_asks_for_usage_and_strips_it_when_not_asked(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-pstream", "a", None, provider="fake", model="ok")
    resp = _post(gateway, secret, stream=True)
    assert resp.status_code == 200
    lines = [ln for ln in resp.text.split("\n\n") if ln.strip()]
    assert lines[-1] == "data: [DONE]"
    assert not any('"usage": {' in ln or '"usage":{' in ln for ln in lines)
    assert upstream.requests[-1]["stream_options"] == {"include_usage": True}
    spend = Spend.objects.get(realm_id="r-pstream")
    assert (spend.tokens_in, spend.tokens_out, spend.streamed) == (11, 7, True)


@pytest.mark.parametrize(
    ("model", "status", "code", "retryable"),
    [
        ("rate-limited", 429, "upstream_rate_limited", True),
        ("broken", 502, "upstream_unavailable", True),
        ("hang", 504, "upstream_timeout", True),
    ],
)
def test_upstream_failures_map_to_openai_errors_and_cost_nothing(
    gateway: GatewayServer,
    upstream: FakeUpstream,
    model: str,
    status: int,
    code: str,
    retryable: bool,
) -> None:
    secret = mint("r-err", "a", "1", provider="fake", model=model)
    for stream in (False, True):
        resp = _post(gateway, secret, stream=stream)
        assert resp.status_code == status
        err = resp.json()["error"]
        assert err["code"] == code and err["retryable"] is retryable
        assert set(err) >= {"message", "type", "code", "retryable"}
        assert UPSTREAM_SECRET not in resp.text
    settled("r-err")
    key = VirtualKey.objects.get(realm_id="r-err")
    assert key.spent_nusd == 0 and key.reserved_nusd == 0
    assert [s.outcome for s in Spend.objects.filter(realm_id="r-err")] == ["upstream_error"] * 2
    assert not Event.objects.filter(realm_id="r-err", kind="spend").exists()


def test_client_disconnect_mid_stream_settles_what_was_used(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secret = mint("r-cut", "a", "1", provider="fake", model="slow-stream")
    with httpx.stream(
        "POST",
        f"{gateway.url}/chat/completions",
        json={"model": "x", "messages": MSG, "stream": True},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    ) as resp:
        got = 0
        for line in resp.iter_lines():
            if line.startswith("data:"):
                got += 1
            if got >= 6:
                break
    # The gateway noticed, closed the provider's stream and billed what was relayed.
    assert upstream.slow_stream_closed.wait(5)
    deadline = time.monotonic() + 5
    while not Spend.objects.filter(realm_id="r-cut").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    spend = Spend.objects.get(realm_id="r-cut")
    assert spend.outcome == "disconnected"
    assert spend.tokens_in > 0 and 5 <= spend.tokens_out < 200
    key = VirtualKey.objects.get(realm_id="r-cut")
    assert key.reserved_nusd == 0 and key.spent_nusd == spend.cost_nusd > 0


def test_scripted_stream_disconnect_still_settles(gateway: GatewayServer) -> None:
    secret = mint("r-cut2", "a", "1", script="steps:\n  - text: " + "abc " * 2000 + "\n")
    with httpx.stream(
        "POST",
        f"{gateway.url}/chat/completions",
        json={"model": "x", "messages": MSG, "stream": True},
        headers={"Authorization": f"Bearer {secret}"},
        timeout=20,
    ) as resp:
        next(resp.iter_lines())
    deadline = time.monotonic() + 5
    while not Spend.objects.filter(realm_id="r-cut2").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    spend = Spend.objects.get(realm_id="r-cut2")
    assert spend.tokens_out == 2000 and spend.cost_nusd > 0
    assert VirtualKey.objects.get(realm_id="r-cut2").reserved_nusd == 0


def test_unknown_and_revoked_keys_get_401(gateway: GatewayServer) -> None:
    assert _post(gateway, "bpk-nonsense").status_code == 401
    resp = httpx.post(f"{gateway.url}/chat/completions", json={"messages": MSG}, timeout=5)
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "invalid_api_key"
    old = mint("r-rot", "a", None, script="steps: []")
    new = mint("r-rot", "a", None, script="steps: []")  # minting again replaces the key
    assert _post(gateway, old).status_code == 401
    assert _post(gateway, new).status_code == 200


def test_concluded_realm_keys_get_403_even_when_cached(
    gateway: GatewayServer, realm_builder: RealmBuilder
) -> None:
    secret = mint("r-end", "a", None, script="steps: []")
    assert _post(gateway, secret).status_code == 200  # now in the gateway's cache
    assert revoke_realm_keys("r-end") == 1
    resp = _post(gateway, secret)
    assert resp.status_code == 403
    assert resp.json()["error"]["code"] == "realm_concluded"

    other = mint("r-term", "b", None, script="steps: []")
    assert _post(gateway, other).status_code == 200
    realm_builder("r-term", agents=[{"id": "b"}], state=Realm.State.ARCHIVED)
    assert _post(gateway, other).status_code == 403
    assert Spend.objects.filter(realm_id="r-term").count() == 1


def test_budget_refusal_is_402_budget_exceeded(gateway: GatewayServer) -> None:
    secret = mint("r-cap", "a", "0.0001", script="steps: []")
    # 4096 default max tokens x 4e-6 = 0.016 USD worst case > cap: refused before forwarding.
    resp = _post(gateway, secret)
    assert resp.status_code == 402
    body = resp.json()["error"]
    assert body["code"] == "budget_exceeded" and body["retryable"] is False
    assert resp.headers["x-should-retry"] == "false"
    assert _post(gateway, secret, max_tokens=5).status_code == 200
    assert Spend.objects.filter(realm_id="r-cap", outcome="ok").count() == 1


def test_bad_requests_change_nothing(gateway: GatewayServer) -> None:
    secret = mint("r-bad", "a", "1", script="steps: []")
    bodies: list[dict[str, object]] = [
        {"messages": []},
        {"messages": "hi"},
        {"messages": MSG, "max_tokens": -3},
    ]
    for body in bodies:
        resp = httpx.post(
            f"{gateway.url}/chat/completions",
            content=json.dumps(body),
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert resp.status_code == 400
    key = VirtualKey.objects.get(realm_id="r-bad")
    assert key.reserved_nusd == 0 and key.calls == 0


def test_stopping_with_a_call_in_flight_releases_it_and_logs_no_traceback(
    tmp_path, profiles: None, upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    import logging
    import threading

    server = GatewayServer(uds_path=tmp_path / "run" / "gw.sock", port=0, upstream_timeout=600)
    server.start()
    secret = mint("r-cut", "a", "1", provider="fake", model="hang")
    caller = threading.Thread(target=lambda: _try_post(server, secret), daemon=True)
    caller.start()
    deadline = time.monotonic() + 10
    while not upstream.requests:
        assert time.monotonic() < deadline, "the call never reached the upstream"
        time.sleep(0.02)
    # uvicorn's loggers do not propagate to the root one caplog listens on.
    seen: list[logging.LogRecord] = []
    catch = logging.Handler()
    catch.emit = seen.append  # type: ignore[method-assign,assignment]
    logging.getLogger("uvicorn.error").addHandler(catch)
    try:
        with caplog.at_level(logging.INFO):
            server.stop()
    finally:
        logging.getLogger("uvicorn.error").removeHandler(catch)
    errors = [r for r in seen + caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [(r.name, r.getMessage()) for r in errors]
    assert "calls still waiting on their upstream were cut off" in caplog.text
    # The cut-off call holds nothing: its reservation went back to the key.
    assert VirtualKey.objects.get(realm_id="r-cut").reserved_nusd == 0


def _try_post(server: GatewayServer, secret: str) -> None:
    # The gateway goes away under it, as intended.
    with contextlib.suppress(httpx.HTTPError):
        _post(server, secret)
