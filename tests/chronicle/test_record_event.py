from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from chronicle import live
from chronicle.kinds import Kind
from chronicle.models import Event
from chronicle.services import record_event


@pytest.mark.django_db(transaction=True)
def test_a_recorded_event_reaches_the_realm_group_after_commit():
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(live.realm_group("demo-1"), channel)

    event = record_event("demo-1", Kind.SCORE, {"agent": "ping", "delta": 1})

    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "realm.event"
    assert message["data"]["id"] == event.pk
    assert message["data"]["kind"] == "score"
    assert Event.objects.get(pk=event.pk).payload == {"agent": "ping", "delta": 1}


def test_group_names_are_channels_safe():
    assert live.realm_group("a b/c") == "realm.a_b_c"
