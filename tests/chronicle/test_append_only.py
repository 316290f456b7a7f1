from __future__ import annotations

import pytest
from django.db import connections, transaction
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
