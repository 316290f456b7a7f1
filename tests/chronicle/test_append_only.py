from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connections, transaction
from django.db.utils import DatabaseError

from chronicle.models import AppendOnlyError, Event, Message


@pytest.mark.django_db
def test_events_can_be_added_but_never_changed_or_removed():
    event = Event.objects.create(realm_id="r1", kind="lifecycle", payload={"event": "running"})
    event.payload = {"event": "archived"}
    with pytest.raises(AppendOnlyError):
        event.save()
    with pytest.raises(AppendOnlyError):
        event.delete()
    with pytest.raises(AppendOnlyError):
        Event.objects.filter(realm_id="r1").update(kind="x")
    with pytest.raises(AppendOnlyError):
        Event.objects.filter(realm_id="r1").delete()
    assert Event.objects.get(pk=event.pk).payload == {"event": "running"}


@pytest.mark.django_db
def test_messages_are_append_only_too():
    message = Message.objects.create(realm_id="r1", channel="!c", sender="@a", body="hi")
    with pytest.raises(AppendOnlyError):
        Message.objects.filter(pk=message.pk).update(body="edited")
    assert Message.objects.get(pk=message.pk).body == "hi"


@pytest.mark.postgres
@pytest.mark.django_db(databases=["postgres"])
def test_postgres_trigger_refuses_raw_updates_and_deletes():
    Event.objects.using("postgres").create(realm_id="r1", kind="score", payload={"delta": 1})
    for statement in (
        "UPDATE chronicle_event SET kind = 'forged'",
        "DELETE FROM chronicle_message",
    ):
        with (
            pytest.raises(DatabaseError, match="append-only"),
            transaction.atomic(using="postgres"),
            connections["postgres"].cursor() as cursor,
        ):
            cursor.execute(statement)
    assert Event.objects.using("postgres").get(realm_id="r1").kind == "score"


def _event(using: str = "default") -> Event:
    event: Event = Event.objects.using(using).create(
        realm_id="r9", kind="score", payload={"delta": 1}
    )
    return event


def _unchanged(event: Event, using: str = "default") -> None:
    row = Event.objects.using(using).get(pk=event.pk)
    assert (row.kind, row.payload) == ("score", {"delta": 1})


@pytest.mark.django_db
def test_an_upsert_through_the_orm_is_refused():
    event = _event()
    forged = Event(pk=event.pk, realm_id="r9", kind="forged", payload={"delta": 100})
    with pytest.raises(AppendOnlyError):
        Event.objects.bulk_create(
            [forged], update_conflicts=True, update_fields=["kind", "payload"], unique_fields=["id"]
        )
    with pytest.raises(AppendOnlyError):
        Event.objects.bulk_update([forged], ["kind"])
    _unchanged(event)


@pytest.mark.django_db
def test_saving_a_fresh_instance_over_an_existing_row_is_refused():
    event = _event()
    with pytest.raises((AppendOnlyError, IntegrityError)), transaction.atomic():
        Event(pk=event.pk, realm_id="r9", kind="forged", payload={}).save()
    with pytest.raises(AppendOnlyError):
        Event(pk=event.pk, realm_id="r9", kind="forged", payload={}).save(force_update=True)
    _unchanged(event)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE chronicle_event SET kind = 'forged'",
        "DELETE FROM chronicle_event",
        "INSERT INTO chronicle_event (id, realm_id, kind, payload, ts_ms) "
        "VALUES ({pk}, 'r9', 'forged', '{{}}', 1) "
        "ON CONFLICT(id) DO UPDATE SET kind = excluded.kind",
        "INSERT OR REPLACE INTO chronicle_event (id, realm_id, kind, payload, ts_ms) "
        "VALUES ({pk}, 'r9', 'forged', '{{}}', 1)",
        "REPLACE INTO chronicle_event (id, realm_id, kind, payload, ts_ms) "
        "VALUES ({pk}, 'r9', 'forged', '{{}}', 1)",
    ],
)
def test_sqlite_refuses_raw_rewrites(statement):
    event = _event()
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connections["default"].cursor() as cursor,
    ):
        cursor.execute(statement.format(pk=event.pk))
    _unchanged(event)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE chronicle_message SET body = 'edited'",
        "DELETE FROM chronicle_message",
        "INSERT OR REPLACE INTO chronicle_message "
        "(realm_id, channel, sender, sender_agent, body, attachments, ts_ms, matrix_event_id) "
        "VALUES ('r9', '!c', '@a', '', 'forged', '[]', 1, '$m1')",
    ],
)
def test_sqlite_refuses_raw_rewrites_of_messages(statement):
    Message.objects.create(
        realm_id="r9", channel="!c", sender="@a", body="hi", matrix_event_id="$m1"
    )
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(),
        connections["default"].cursor() as cursor,
    ):
        cursor.execute(statement)
    assert Message.objects.get(matrix_event_id="$m1").body == "hi"


@pytest.mark.django_db
def test_a_duplicate_mirror_insert_is_still_ignored():
    Message.objects.create(
        realm_id="r9", channel="!c", sender="@a", body="hi", matrix_event_id="$m2"
    )
    again = Message(realm_id="r9", channel="!c", sender="@a", body="other", matrix_event_id="$m2")
    Message.objects.bulk_create([again], ignore_conflicts=True)
    assert Message.objects.get(matrix_event_id="$m2").body == "hi"


@pytest.mark.django_db(transaction=True)
def test_flush_empties_the_chronicle_and_keeps_it_append_only():
    _event()
    call_command("flush", interactive=False, verbosity=0)
    assert not Event.objects.exists()
    event = _event()
    with pytest.raises(DatabaseError, match="append-only"), connections["default"].cursor() as c:
        c.execute("UPDATE chronicle_event SET kind = 'forged'")
    _unchanged(event)


@pytest.mark.postgres
@pytest.mark.django_db(databases=["postgres"])
def test_postgres_refuses_upserts_through_the_orm_and_raw():
    event = _event("postgres")
    forged = Event(pk=event.pk, realm_id="r9", kind="forged", payload={"delta": 100})
    with pytest.raises(AppendOnlyError):
        Event.objects.using("postgres").bulk_create(
            [forged], update_conflicts=True, update_fields=["kind"], unique_fields=["id"]
        )
    with pytest.raises(AppendOnlyError):
        Event.objects.using("postgres").bulk_update([forged], ["kind"])
    with pytest.raises(AppendOnlyError):
        Event.objects.using("postgres").filter(pk=event.pk).update(kind="forged")
    with (
        pytest.raises(DatabaseError, match="append-only"),
        transaction.atomic(using="postgres"),
        connections["postgres"].cursor() as cursor,
    ):
        cursor.execute(
            "INSERT INTO chronicle_event (id, realm_id, kind, payload, ts_ms) "
            "VALUES (%s, 'r9', 'forged', '{}', 1) ON CONFLICT (id) DO UPDATE SET kind = 'forged'",
            [event.pk],
        )
    _unchanged(event, "postgres")
