"""A call in flight when its realm ends is in the realm's books, and its recording, before
the teardown ends."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from chronicle.models import Event
from ledger.gateway.record import Pending, Writer
from ledger.gateway.server import GatewayServer
from ledger.models import Spend, VirtualKey
from ledger.services.keys import wait_settled
from realms.forge import procs
from realms.models import Realm
from realms.replay import recording
from realms.services import teardown
from tests.ledger.conftest import mint
from tests.ledger.fake_upstream import FakeUpstream
from tests.realms.services.endings import live_realm, teardown_errors

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


def _call_in_flight(
    gateway: GatewayServer, realm_id: str, model: str, *, stream: bool = False
) -> threading.Thread:
    secret = mint(realm_id, "ping-late", "1", provider="fake", model=model)
    body = {"model": "x", "messages": [{"role": "user", "content": "hello"}], "stream": stream}
    headers = {"Authorization": f"Bearer {secret}"}
    url = f"{gateway.url}/chat/completions"
    call = threading.Thread(target=lambda: httpx.post(url, json=body, headers=headers, timeout=20))
    call.start()
    deadline = time.monotonic() + 5
    while not VirtualKey.objects.filter(realm_id=realm_id, reserved_nusd__gt=0).exists():
        assert time.monotonic() < deadline, "the call never reserved"
        time.sleep(0.01)
    return call


def test_the_teardown_waits_for_a_call_in_flight_to_settle(
    gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    realm = live_realm("td-late", Realm.State.RUNNING)
    call = _call_in_flight(gateway, realm.realm_id, "slow")
    teardown.tear_down(realm.realm_id, "realm concluded")
    # The upstream answers a second after the call began; the teardown outlasted it.
    spend = Spend.objects.get(realm_id="td-late", agent_id="ping-late")
    assert spend.tokens_in == 11 and spend.cost_nusd > 0
    assert not VirtualKey.objects.filter(realm_id="td-late", reserved_nusd__gt=0).exists()
    assert teardown_errors("td-late", announced=False) == []
    call.join(10)


def test_a_call_still_open_at_the_bound_is_chronicled_not_waited_out(
    gateway: GatewayServer, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    realm = live_realm("td-hung", Realm.State.RUNNING)
    call = _call_in_flight(gateway, realm.realm_id, "hang")
    monkeypatch.setattr(teardown, "SETTLE_WAIT_S", 0.2)
    began = time.monotonic()
    teardown.tear_down(realm.realm_id, "realm concluded")
    assert time.monotonic() - began < 1.4  # well before the gateway's 1.5 s upstream timeout
    [error] = teardown_errors("td-hung", announced=False)
    assert error["step"] == "settle calls"
    assert "1 agent(s) still had a model call in flight" in str(error["detail"])
    # It still settles once the gateway gives up on the upstream; nothing is lost.
    assert wait_settled("td-hung", 5) == 0
    call.join(10)


@pytest.mark.parametrize("stream", [False, True])
def test_a_settled_call_is_already_recorded_however_slow_the_disk(
    gateway: GatewayServer,
    upstream: FakeUpstream,
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
    tmp_path: Path,
    stream: bool,
) -> None:
    settings.BEARPIT_HOME = tmp_path / "home"
    slow = Writer.write

    def slow_disk(self: Writer, item: Pending) -> None:
        time.sleep(0.3)  # far longer than the settlements' 20 ms linger
        slow(self, item)

    monkeypatch.setattr(Writer, "write", slow_disk)
    realm_id = f"rec-order-{int(stream)}"
    call = _call_in_flight(gateway, realm_id, "ok", stream=stream)
    assert wait_settled(realm_id, 10, poll_s=0.001) == 0
    # The moment the books show the call settled, its recording is on disk.
    [recorded] = recording.calls(recording.live_dir(realm_id), "ping-late")
    assert recorded.tokens_in == 11 and recorded.stream is stream
    call.join(10)


def test_a_reservation_of_a_killed_gateway_is_released_not_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    realm = live_realm("td-orphan", Realm.State.RUNNING)
    mint(realm.realm_id, "ping-late", "1")
    # A real process of this host, gone by the time the teardown looks at its reservation.
    gone = subprocess.Popen(["sleep", "0.2"])
    holder = f"{socket.gethostname()}:{gone.pid}:{procs.start_time(gone.pid)}"
    assert procs.identity_alive(holder) is True
    gone.wait(5)
    assert procs.identity_alive(holder) is False
    VirtualKey.objects.filter(realm_id="td-orphan", agent_id="ping-late").update(
        reserved_nusd=5000, reserved_by=holder
    )
    monkeypatch.setattr(teardown, "SETTLE_WAIT_S", 0.5)
    teardown.tear_down(realm.realm_id, "realm concluded")
    assert teardown_errors("td-orphan", announced=False) == []
    assert VirtualKey.objects.get(realm_id="td-orphan", agent_id="ping-late").reserved_nusd == 0
    [released] = Event.objects.filter(
        realm_id="td-orphan", kind="system", payload__event="reservation_released"
    ).values_list("payload", flat=True)
    assert released["agent"] == "ping-late" and released["usd"] == pytest.approx(5e-6)


def test_a_reservation_of_a_live_gateway_is_waited_for_not_released(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    realm = live_realm("td-alive", Realm.State.RUNNING)
    mint(realm.realm_id, "ping-late", "1")
    VirtualKey.objects.filter(realm_id="td-alive", agent_id="ping-late").update(
        reserved_nusd=5000, reserved_by=procs.identity()
    )
    monkeypatch.setattr(teardown, "SETTLE_WAIT_S", 0.2)
    teardown.tear_down(realm.realm_id, "realm concluded")
    [error] = teardown_errors("td-alive", announced=False)
    assert error["step"] == "settle calls"
    assert VirtualKey.objects.get(realm_id="td-alive", agent_id="ping-late").reserved_nusd == 5000
