from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from ledger import keystore
from ledger.gateway.server import GatewayServer
from ledger.services.profiles import seed_profiles
from tests.ledger.fake_upstream import FakeUpstream


@pytest.fixture(autouse=True)
def own_keystore(settings: Any) -> Iterator[str]:
    """Every ledger test has a keystore key of its own.

    Other tests share the test run's BEARPIT_HOME and may leave a ``keystore.key`` there
    (even one that is no Fernet key); whether these tests pass must not depend on it.
    Subprocesses that read the keystore get the key from the environment (see tests).
    """
    settings.BEARPIT_KEYSTORE_KEY = Fernet.generate_key().decode()
    keystore.reset_cache()
    yield settings.BEARPIT_KEYSTORE_KEY
    keystore.reset_cache()


@pytest.fixture
def profiles(django_db_blocker: object) -> None:
    seed_profiles()


@pytest.fixture
def gateway(tmp_path: Path, profiles: None) -> Iterator[GatewayServer]:
    server = GatewayServer(uds_path=tmp_path / "run" / "gateway.sock", port=0, upstream_timeout=1.5)
    server.start()
    yield server
    server.stop()


def mint(realm: str, agent: str, cap: str | None, **kw: Any) -> str:
    from ledger.services.keys import mint_virtual_key

    kw.setdefault("provider", "offline")
    kw.setdefault("model", "scripted-medium")
    kw.setdefault("on_exhausted", "starve")
    if kw["provider"] == "fake":
        kw.setdefault("input_cost_per_token", Decimal("1e-6"))
        kw.setdefault("output_cost_per_token", Decimal("2e-6"))
    _, secret = mint_virtual_key(
        realm_id=realm, agent_id=agent, cap_usd=None if cap is None else Decimal(cap), **kw
    )
    return secret


UPSTREAM_SECRET = "sk-test-UPSTREAMSECRET-0123456789abcdefABCDEF"


@pytest.fixture
def upstream(profiles: None) -> Iterator[FakeUpstream]:
    """A fake OpenAI-compatible provider, with a profile and a stored credential for it."""
    from ledger.models import ProviderProfile
    from ledger.services.credentials import add_credential

    fake = FakeUpstream().start()
    tiers = {
        t: {"model": "ok", "input_cost_per_token": 1e-06, "output_cost_per_token": 2e-06}
        for t in ("small", "medium", "large")
    }
    ProviderProfile.objects.create(
        name="fake", transport="openai", api_key_ref="fake-main", categories=tiers
    )
    add_credential(handle="fake-main", provider="fake", api_key=UPSTREAM_SECRET, api_base=fake.base)
    yield fake
    fake.stop()


def settled(realm_id: str, timeout: float = 10.0) -> None:
    """Wait until no call of the realm holds a reservation (all settled)."""
    from ledger.services.keys import wait_settled

    assert wait_settled(realm_id, timeout) == 0, f"calls of {realm_id} still unsettled"
