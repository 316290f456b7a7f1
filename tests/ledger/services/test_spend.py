"""Spend read-outs, replaced keys and revocation."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chronicle.models import Event
from ledger.models import VirtualKey
from ledger.services import spend
from ledger.services.keys import revoke_realm_keys
from tests.ledger.conftest import mint

pytestmark = pytest.mark.django_db


def _call(key: VirtualKey, reserve: int, cost: int) -> None:
    assert spend.reserve(key.pk, key.realm_id, reserve) is None
    spend.settle(
        key_id=key.pk,
        reserved_nusd=reserve,
        cost_nusd=cost,
        tokens_in=10,
        tokens_out=5,
        latency_ms=3,
        outcome="ok",
        model=key.model,
        streamed=False,
    )


def test_realm_spend_follows_an_agent_across_replaced_keys(profiles: None) -> None:
    mint("r-s", "a", "0.001")
    first = VirtualKey.objects.get(realm_id="r-s", agent_id="a")
    _call(first, 400_000, 300_000)
    mint("r-s", "a", "0.001")  # e.g. the sandbox was restarted
    second = VirtualKey.objects.get(realm_id="r-s", agent_id="a", revoked_at__isnull=True)
    assert second.base_nusd == 300_000
    # The cap counts what the earlier key spent: 300k + 800k > 1M.
    assert spend.reserve(second.pk, "r-s", 800_000) is spend.Refusal.EXHAUSTED
    _call(second, 600_000, 200_000)
    mint("r-s", "b", None)
    out = spend.realm_spend("r-s")
    assert out["a"].usd == Decimal("0.0005") and out["a"].tokens_in == 20
    assert out["a"].cap_usd == Decimal("0.001") and out["a"].exhausted  # it was refused
    assert out["b"].usd == 0 and out["b"].cap_usd is None and not out["b"].exhausted
    payloads = [
        e.payload for e in Event.objects.filter(realm_id="r-s", kind="spend").order_by("id")
    ]
    assert [p["usd"] for p in payloads] == [0.0003, 0.0002]
    assert payloads[-1]["cumulative"] == 0.0005 and payloads[-1]["cap"] == 0.001


def test_in_flight_reservations_refuse_as_busy_not_exhausted(profiles: None) -> None:
    mint("r-b", "a", "0.001")
    key = VirtualKey.objects.get(realm_id="r-b")
    assert spend.reserve(key.pk, "r-b", 700_000) is None
    assert spend.reserve(key.pk, "r-b", 700_000) is spend.Refusal.BUSY
    assert not spend.realm_spend("r-b")["a"].exhausted


def test_revoke_realm_keys_counts_live_keys_only(profiles: None) -> None:
    mint("r-v", "a", None)
    mint("r-v", "b", None)
    mint("r-other", "a", None)
    assert revoke_realm_keys("r-v") == 2
    assert revoke_realm_keys("r-v") == 0
    key = VirtualKey.objects.filter(realm_id="r-v").first()
    assert key is not None
    assert spend.reserve(key.pk, "r-v", 1) is spend.Refusal.CONCLUDED
    assert VirtualKey.objects.filter(realm_id="r-other", revoked_at__isnull=True).count() == 1


def test_one_bad_reservation_in_a_round_fails_alone(profiles: None) -> None:
    mint("r-one", "a", "1")
    mint("r-two", "b", "1")
    bad = VirtualKey.objects.get(realm_id="r-one")
    good = VirtualKey.objects.get(realm_id="r-two")
    answers = spend.reserve_many([(bad.pk, "r-one", 10**30), (good.pk, "r-two", 1000)])
    assert isinstance(answers[0], Exception) and answers[1] is None
    bad.refresh_from_db()
    good.refresh_from_db()
    assert (bad.reserved_nusd, good.reserved_nusd) == (0, 1000)


def test_one_bad_settlement_in_a_batch_fails_alone(profiles: None) -> None:
    mint("r-s1", "a", "1")
    mint("r-s2", "b", "1")
    bad = VirtualKey.objects.get(realm_id="r-s1")
    good = VirtualKey.objects.get(realm_id="r-s2")
    for key in (bad, good):
        assert spend.reserve(key.pk, key.realm_id, 5000) is None

    def item(key: VirtualKey, tokens_in: int) -> spend.Settlement:
        return spend.Settlement(
            key_id=key.pk,
            reserved_nusd=5000,
            cost_nusd=100,
            tokens_in=tokens_in,
            tokens_out=1,
            latency_ms=1,
            outcome="ok",
            model=key.model,
            streamed=False,
        )

    failed = spend.settle_each([item(bad, -5), item(good, 10)])
    assert [f.key_id for f in failed] == [bad.pk]
    good.refresh_from_db()
    bad.refresh_from_db()
    assert (good.reserved_nusd, good.spent_nusd, good.calls) == (0, 100, 1)
    assert bad.reserved_nusd == 5000  # what cannot be written stays held: the safe side
