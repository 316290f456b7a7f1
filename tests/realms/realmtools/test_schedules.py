"""Schedules through realmtools: validation up front, bounds, cancel, firing once per due time,
and the acknowledgement read from the runtime's trace."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from chronicle.kinds import Kind
from chronicle.models import Event, now_ms
from chronicle.services import record_event
from realms.plan import plan_of
from realms.realmtools.jobs import commons_gated
from realms.realmtools.models import Schedule, Wake
from realms.realmtools.schedules_cron import CronError, parse_cron
from realms.realmtools.schedules_wakes import acknowledge, delivered, fire_due, to_deliver

pytestmark = pytest.mark.timeout(60)

SCHEDULES = {"mechanics": [{"kind": "schedules", "max_per_agent": 2, "min_every": "30s"}]}


def _ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


def _utc(ms: int | None) -> datetime:
    assert ms is not None
    return datetime.fromtimestamp(ms / 1000, UTC)


def test_a_cron_is_read_in_five_fields_and_gives_its_next_time() -> None:
    weekdays = parse_cron("30 9 * * mon-fri")
    # Saturday 2026-12-05 10:00 → Monday 09:30.
    assert _utc(weekdays.next_after(_ms(2026, 12, 5, 10, 0))) == datetime(
        2026, 12, 7, 9, 30, tzinfo=UTC
    )
    quarter = parse_cron("*/15 * * * *")
    assert _utc(quarter.next_after(_ms(2026, 12, 1, 10, 7))).minute == 15
    # Both day fields restricted: either matches (Vixie cron); 7 is Sunday too.
    either = parse_cron("0 0 1 * 7")
    assert _utc(either.next_after(_ms(2026, 12, 1, 0, 0))) == datetime(
        2026, 12, 6, 0, 0, tzinfo=UTC
    )
    assert parse_cron("0 12 29 feb *").next_after(_ms(2026, 1, 1)) == _ms(2028, 2, 29, 12, 0)
    assert parse_cron("0 0 30 2 *").next_after(_ms(2026, 1, 1)) is None


@pytest.mark.parametrize(
    ("cron", "says"),
    [
        ("* * * *", "has 4"),
        ("61 * * * *", "minute: 61 is out of range 0-59"),
        ("0 24 * * *", "hour: 24 is out of range 0-23"),
        ("0 0 0 * *", "day of month: 0 is out of range 1-31"),
        ("0 0 * 13 *", "month: 13 is out of range 1-12"),
        ("0 0 * * funday", "day of week: 'funday' is not a number"),
        ("0 5-1 * * *", "hour: the range '5-1' runs backwards"),
        ("*/0 * * * *", "minute: the step in '*/0' must be at least 1"),
        ("0 0 * * 1;2", "day of week: cannot read '1;2'"),
    ],
)
def test_a_bad_cron_is_refused_with_the_field_named(cron: str, says: str) -> None:
    with pytest.raises(CronError) as caught:
        parse_cron(cron)
    assert says in str(caught.value)


def test_schedules_are_checked_up_front_and_bounded_per_agent(realms) -> None:
    realm = realms(spec=SCHEDULES)
    orin, vela = realms.agent(realm, "orin"), realms.agent(realm, "vela")
    assert {"schedule", "schedule_cancel", "schedule_list"} <= orin.tools()
    refused = orin.calls(
        ("schedule", {"note": "x", "cron": "0 25 * * *"}),
        ("schedule", {"note": "x", "after": "10m", "every": "1h"}),
        ("schedule", {"note": "x"}),
        ("schedule", {"note": "x", "every": "10s"}),
        ("schedule", {"note": "x", "cron": "0 0 30 2 *"}),
        ("schedule", {"note": "  ", "after": "1m"}),
        ("schedule", {"note": "x", "after": "soon"}),
    )
    assert [r["error"] for r in refused] == [
        "cron: hour: 25 is out of range 0-23",
        "give exactly one of after (a delay), every (an interval) or cron",
        "give exactly one of after (a delay), every (an interval) or cron",
        "every: expected from 30s (this realm's shortest interval) to 30d; got 10s",
        "cron: '0 0 30 2 *' never fires",
        "note is empty: say what you want to be reminded of",
        "after: expected a duration such as 90s, 5m or 2h; got 'soon'",
    ]
    assert not Schedule.objects.filter(realm=realm).exists()
    assert not Event.objects.filter(realm_id=realm.realm_id, kind=Kind.SCHEDULE).exists()

    first = orin.call("schedule", note="stretch", every="1h")
    assert first["scheduled"]["every"] == "1h" and first["scheduled"]["next_due_in_s"] >= 3590
    assert "scheduled" in orin.call("schedule", note="again", cron="*/5 * * * *")
    third = orin.call("schedule", note="one too many", after="5m")
    assert "this realm's limit" in third["error"]
    assert len(orin.call("schedule_list")["active"]) == 2
    # Another agent has its own bound, and cannot cancel what is not its own.
    assert "scheduled" in vela.call("schedule", note="mine", cron="0 9 * * *")
    number = first["scheduled"]["id"]
    assert vela.call("schedule_cancel", id=number) == {
        "error": f"you have no schedule {number}; schedule_list shows yours"
    }
    assert orin.call("schedule_cancel", id=f"S{number}") == {"cancelled": number}
    assert "already cancelled" in orin.call("schedule_cancel", id=number)["error"]
    assert "scheduled" in orin.call("schedule", note="room again", after="1m")
    ops = [e.payload["op"] for e in Event.objects.filter(realm_id=realm.realm_id, kind="schedule")]
    assert ops.count("cancel") == 1 and "add" in ops


def test_a_cron_firing_more_often_than_the_floor_is_refused(realms) -> None:
    realm = realms(spec={"mechanics": [{"kind": "schedules", "min_every": "5m"}]})
    orin = realms.agent(realm, "orin")
    assert orin.call("schedule", note="x", cron="*/2 * * * *") == {
        "error": "cron: '*/2 * * * *' fires every 120s at times; this realm's schedules "
        "repeat at most every 300s"
    }
    assert "scheduled" in orin.call("schedule", note="x", cron="*/5 * * * *")


def test_a_realm_without_the_mechanic_has_no_schedules(realms) -> None:
    realm = realms()
    orin = realms.agent(realm, "orin")
    assert "schedule" not in orin.tools()
    assert orin.call("schedule", note="x", after="1m") == {"error": "this realm has no schedules"}


def test_a_due_schedule_fires_once_and_a_repeating_one_moves_on(realms) -> None:
    realm = realms(spec=SCHEDULES)
    orin = realms.agent(realm, "orin")
    once = orin.call("schedule", note="tea @vela", after="5s")["scheduled"]["id"]
    hourly = orin.call("schedule", note="stand up", every="1h")["scheduled"]["id"]
    Schedule.objects.filter(realm=realm).update(next_fire_ms=now_ms() - 1000)
    assert sorted(fire_due(realm.realm_id, private=True)) == [once, hourly]
    # Firing again (another Warden, a restart) finds nothing due: one wake per due time.
    assert fire_due(realm.realm_id, private=True) == []
    wakes = list(Wake.objects.filter(realm=realm).order_by("ref"))
    assert [(w.ref, w.agent_id, w.state) for w in wakes] == [
        (once, "orin", "pending"),
        (hourly, "orin", "pending"),
    ]
    # The note is the agent's own words, with no @ left that would wake someone else.
    assert wakes[0].text == 'your schedule 1 (after 5s) is due. Your own note: "tea vela"'
    rows = {s.number: s for s in Schedule.objects.filter(realm=realm)}
    assert rows[once].state == "done" and rows[once].next_fire_ms is None
    assert rows[hourly].state == "active"
    assert (rows[hourly].next_fire_ms or 0) > now_ms() + 3_500_000
    # Due again while its wake is still pending: not stacked, counted as skipped.
    Schedule.objects.filter(pk=rows[hourly].pk).update(next_fire_ms=now_ms() - 1)
    assert fire_due(realm.realm_id, private=True) == []
    assert Wake.objects.filter(realm=realm).count() == 2
    assert Schedule.objects.get(pk=rows[hourly].pk).skipped == 1
    due = [e.payload for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.WAKE)]
    assert [(p["op"], p["ref"]) for p in due] == [("due", once), ("due", hourly)]


def test_in_an_ungated_commons_the_note_is_not_posted(realms) -> None:
    realm = realms(spec={**SCHEDULES, "environment": {"require_mention": False}})
    orin = realms.agent(realm, "orin")
    orin.call("schedule", note="my secret plan", after="5s")
    Schedule.objects.filter(realm=realm).update(next_fire_ms=now_ms() - 1)
    fire_due(realm.realm_id, private=commons_gated(plan_of(realm)))
    (wake,) = Wake.objects.filter(realm=realm)
    assert "secret" not in wake.text and "schedule_list shows it" in wake.text


def _trace(realm_id: str, agent: str, seq: int, type: str, **data: object) -> None:
    record_event(
        realm_id,
        Kind.TRACE,
        {"agent_id": agent, "run_id": realm_id, "seq": seq, "type": type, "data": data},
    )


def test_a_wake_is_acknowledged_only_once_the_runtime_read_it(realms) -> None:
    realm = realms(spec=SCHEDULES)
    orin = realms.agent(realm, "orin")
    orin.call("schedule", note="check", after="5s")
    Schedule.objects.filter(realm=realm).update(next_fire_ms=now_ms() - 1)
    fire_due(realm.realm_id, private=True)
    (due,) = to_deliver(realm.realm_id, [])
    delivered(realm.realm_id, due, "$post-1")
    assert to_deliver(realm.realm_id, []) == []  # not again before REDELIVER_S
    # The runtime took the post into a turn that died before its model answered: no ack.
    _trace(realm.realm_id, "orin", 1, "wake", source=["message"], events=["$post-1"])
    _trace(realm.realm_id, "orin", 2, "turn_end", termination="provider_error")
    _trace(realm.realm_id, "vela", 1, "model_response")
    assert acknowledge(realm.realm_id) == []
    # Unacknowledged after REDELIVER_S: posted again.
    Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
    (again,) = to_deliver(realm.realm_id, [])
    assert again.delivery == 2
    delivered(realm.realm_id, again, "$post-2")
    # The restarted runtime reads the second post and its model answers: acknowledged.
    _trace(realm.realm_id, "orin", 1, "wake", source=["message"], events=["$post-2"])
    _trace(realm.realm_id, "orin", 2, "model_response")
    (acked,) = acknowledge(realm.realm_id)
    assert Wake.objects.get(pk=acked).state == "acked"
    Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
    assert to_deliver(realm.realm_id, []) == []
    ops = [e.payload["op"] for e in Event.objects.filter(realm_id=realm.realm_id, kind=Kind.WAKE)]
    assert ops == ["due", "deliver", "deliver", "ack"]


def test_an_unread_wake_is_given_up_after_its_last_delivery(realms) -> None:
    realm = realms(spec=SCHEDULES)
    orin = realms.agent(realm, "orin")
    orin.call("schedule", note="check", after="5s")
    Schedule.objects.filter(realm=realm).update(next_fire_ms=now_ms() - 1)
    fire_due(realm.realm_id, private=True)
    for n in range(5):
        Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
        (due,) = to_deliver(realm.realm_id, [])
        delivered(realm.realm_id, due, f"$post-{n}")
    Wake.objects.filter(realm=realm).update(delivered_ms=now_ms() - 121_000)
    assert to_deliver(realm.realm_id, []) == []
    assert Wake.objects.get(realm=realm).state == "gave_up"


def test_racing_calls_never_hold_more_schedules_than_the_bound(realms) -> None:
    realm = realms(spec=SCHEDULES)
    orin = realms.agent(realm, "orin")
    with ThreadPoolExecutor(max_workers=5) as pool:
        answers = list(
            pool.map(lambda n: orin.call("schedule", note=f"n{n}", after="1m"), range(5))
        )
    assert sum("scheduled" in a for a in answers) == 2
    assert Schedule.objects.filter(realm=realm, agent_id="orin").count() == 2
