"""DM delivery: permission by room, quotas per round, the eliminated."""

from __future__ import annotations

from realms.warden.dms import Deliver, DmLedger, Notice, Private, pair_key, plan_deliveries

ROOMS = {pair_key("red", "gold"): "!rg", pair_key("red", "blue"): "!rb"}


def plan(privates, *, eliminated=frozenset(), quotas=None, round_number=1, ledger=None):
    return plan_deliveries(
        privates,
        rooms=ROOMS,
        eliminated=set(eliminated),
        quotas=quotas or {},
        round_number=round_number,
        ledger=ledger if ledger is not None else DmLedger(),
    )


def test_it_delivers_as_the_sender_mentioning_the_recipient() -> None:
    out = plan([Private("red", "gold", "deal?")])
    assert out == [Deliver("!rg", "red", "gold", "@gold deal?")]


def test_a_pair_without_a_room_is_never_delivered() -> None:
    assert plan([Private("gold", "blue", "psst")]) == []


def test_quota_mutes_once_per_round_and_resets_next_round() -> None:
    ledger = DmLedger()
    msgs = [Private("red", "gold", f"m{i}") for i in range(4)]
    out = plan(msgs, quotas={"red": 2}, ledger=ledger)
    assert [type(a) for a in out] == [Deliver, Deliver, Notice]
    assert isinstance(out[2], Notice) and out[2].text.startswith("🔇")
    assert "@" not in out[2].text
    again = plan([Private("red", "blue", "x")], quotas={"red": 2}, ledger=ledger)
    assert again == []
    next_round = plan(
        [Private("red", "blue", "y")], quotas={"red": 2}, round_number=2, ledger=ledger
    )
    assert next_round == [Deliver("!rb", "red", "blue", "@blue y")]


def test_quota_does_not_apply_without_turns() -> None:
    msgs = [Private("red", "gold", f"m{i}") for i in range(3)]
    out = plan(msgs, quotas={"red": 1}, round_number=None)
    assert all(isinstance(a, Deliver) for a in out) and len(out) == 3


def test_eliminated_agents_neither_send_nor_receive() -> None:
    ledger = DmLedger()
    out = plan(
        [Private("gold", "red", "hi"), Private("red", "gold", "a"), Private("red", "gold", "b")],
        eliminated={"gold"},
        ledger=ledger,
    )
    assert len(out) == 1 and isinstance(out[0], Notice) and out[0].text.startswith("🚫")
    assert DmLedger.from_json(ledger.to_json()) == ledger
