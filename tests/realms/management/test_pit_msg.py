"""``manage.py pit_msg REALM TEXT [--to AGENT]``: the operator speaks in the Commons."""

from __future__ import annotations

import pytest
from django.core.management import CommandError

from chronicle.kinds import Kind
from chronicle.models import Event
from realms.models import Realm
from tests.fixtures.realms import RealmBuilder

from .cli import run

pytestmark = [pytest.mark.timeout(30), pytest.mark.django_db]


def test_refusals_are_command_errors(realm_builder: RealmBuilder) -> None:
    with pytest.raises(CommandError, match="'ghost-000000': no such realm"):
        run("pit_msg", "ghost-000000", "hello")
    realm_builder("waiting-abc123", agents=[{"id": "ann"}])
    with pytest.raises(CommandError, match="is pending, not running"):
        run("pit_msg", "waiting-abc123", "hello")
    realm_builder("live-abc123", agents=[{"id": "ann"}], state=Realm.State.RUNNING)
    with pytest.raises(CommandError, match="'bob' is not a live agent of live-abc123 \\(ann\\)"):
        run("pit_msg", "live-abc123", "hello", "--to", "bob")
    with pytest.raises(CommandError, match="empty"):
        run("pit_msg", "live-abc123", "  ")


def test_a_message_the_bus_cannot_take_is_chronicled_and_said(
    realm_builder: RealmBuilder,
) -> None:
    realm = realm_builder(
        agents=[{"id": "ann"}, {"id": "ben"}], state=Realm.State.RUNNING
    )  # launched and running, but no bus was ever provisioned
    with pytest.raises(CommandError, match="not delivered: the realm has no message bus"):
        run("pit_msg", realm.realm_id, "please", "hurry")
    (kept,) = Event.objects.filter(realm_id=realm.realm_id, kind=Kind.SYSTEM)
    assert kept.payload["text"] == "@ann @ben please hurry"
    assert kept.payload["delivered"] is False
