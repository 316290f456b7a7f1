"""The gateway's queue per local model server: no more calls reach it than it has slots.

A local server's slots are its parallel requests; calls beyond them wait in the gateway
(their upstream timeout not yet running) and are all answered. Other providers' calls
are never queued.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgiref.sync import async_to_sync

from ledger.gateway.server import GatewayServer
from ledger.models import ProviderProfile
from tests.ledger.conftest import mint, settled
from tests.ledger.fake_upstream import FakeUpstream

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(60)]


@pytest.fixture
def one_slot_gateway(
    tmp_path: Path, settings: Any, upstream: FakeUpstream
) -> Iterator[GatewayServer]:
    settings.BEARPIT_LOCAL_SLOTS = 1
    ProviderProfile.objects.filter(name="local").update(api_base=upstream.base)
    server = GatewayServer(uds_path=tmp_path / "run" / "gateway.sock", port=0, upstream_timeout=5)
    server.start()
    yield server
    server.stop()


async def _together(server: GatewayServer, secrets: list[str]) -> list[httpx.Response]:
    import asyncio

    async with httpx.AsyncClient(timeout=20) as client:
        return await asyncio.gather(
            *(
                client.post(
                    f"{server.url}/chat/completions",
                    json={
                        "model": "busy",
                        "messages": [{"role": "user", "content": "hi"}],
                        "max_tokens": 8,
                    },
                    headers={"Authorization": f"Bearer {secret}"},
                )
                for secret in secrets
            )
        )


def test_calls_to_a_local_server_wait_for_its_one_slot(
    one_slot_gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secrets = [mint("q-local", f"a{i}", None, provider="local", model="busy") for i in range(3)]
    answers = async_to_sync(_together)(one_slot_gateway, secrets)
    assert [r.status_code for r in answers] == [200, 200, 200], [r.text for r in answers]
    assert upstream.most_at_once == 1
    assert len(upstream.requests) == 3
    settled("q-local")


@pytest.fixture
def sized_gateway(tmp_path: Path, settings: Any, upstream: FakeUpstream) -> Iterator[GatewayServer]:
    """A gateway left to learn each local server's width from the server itself."""
    settings.BEARPIT_LOCAL_SLOTS = 0
    settings.BEARPIT_LOCAL_MAX_SLOTS = 4
    ProviderProfile.objects.filter(name="local").update(api_base=upstream.base)
    server = GatewayServer(uds_path=tmp_path / "run" / "gateway.sock", port=0, upstream_timeout=5)
    server.start()
    yield server
    server.stop()


def test_the_queue_is_as_wide_as_the_server_says_it_is(
    sized_gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    upstream.total_slots = 2
    secrets = [mint("q-wide", f"a{i}", None, provider="local", model="busy") for i in range(5)]
    answers = async_to_sync(_together)(sized_gateway, secrets)
    assert [r.status_code for r in answers] == [200] * 5, [r.text for r in answers]
    assert upstream.most_at_once == 2
    assert upstream.props_asked == 1  # once per server, not once per call
    settled("q-wide")


def test_a_server_that_does_not_say_gets_the_most_slots_allowed(
    sized_gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secrets = [mint("q-mute", f"a{i}", None, provider="local", model="busy") for i in range(6)]
    answers = async_to_sync(_together)(sized_gateway, secrets)
    assert [r.status_code for r in answers] == [200] * 6, [r.text for r in answers]
    assert upstream.most_at_once == 4
    settled("q-mute")


def test_other_providers_are_not_queued(
    one_slot_gateway: GatewayServer, upstream: FakeUpstream
) -> None:
    secrets = [mint("q-fake", f"a{i}", None, provider="fake", model="busy") for i in range(3)]
    answers = async_to_sync(_together)(one_slot_gateway, secrets)
    assert [r.status_code for r in answers] == [200, 200, 200], [r.text for r in answers]
    assert upstream.most_at_once == 3
    settled("q-fake")
