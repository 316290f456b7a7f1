"""Caps are physics: 1,000 randomized concurrent calls never settle past any cap (SQLite)."""

from __future__ import annotations

import asyncio
import random

import pytest

from ledger.gateway.server import GatewayServer
from ledger.models import Spend, VirtualKey
from tests.ledger.conftest import mint, settled
from tests.ledger.load import hammer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]

SCRIPT = "loop: true\nsteps:\n  - text: " + "lorem ipsum dolor sit amet " * 8 + "\n"


def test_concurrent_calls_never_overspend(gateway: GatewayServer) -> None:
    rng = random.Random(7)
    secrets = [
        mint("r-load", f"agent-{i}", f"{rng.uniform(0.0004, 0.004):.6f}", script=SCRIPT)
        for i in range(12)
    ]
    result = asyncio.run(
        hammer(
            f"{gateway.url}/chat/completions",
            secrets,
            calls=1000,
            concurrency=24,
            seed=11,
            uds=str(gateway.uds_path),
        )
    )
    assert sum(result.statuses.values()) == 1000
    assert set(result.statuses) <= {200, 402}
    # The caps bite, and they do not stop everything.
    assert result.statuses[402] > 100 and result.statuses[200] > 100
    assert set(result.codes) == {"budget_exceeded"}
    settled("r-load")
    for key in VirtualKey.objects.filter(realm_id="r-load"):
        assert key.cap_nusd is not None
        assert key.spent_nusd <= key.cap_nusd, key.agent_id
        assert key.reserved_nusd == 0
        spends = Spend.objects.filter(key=key)
        assert key.spent_nusd == sum(s.cost_nusd for s in spends)
        assert key.calls == spends.count()
    assert Spend.objects.filter(realm_id="r-load", outcome="ok").count() == result.statuses[200]
