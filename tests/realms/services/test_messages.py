"""Operator messages: posted on the Commons to the live agents, refused otherwise."""

from __future__ import annotations

import pytest

from chronicle.models import Message
from ledger.services.profiles import seed_profiles
from realms.models import Realm, RealmAgent
from realms.services.messages import MessageError, send_operator_message
from tests.conftest import REPO
from tests.realms.warden.test_tick import running_realm, wait_for

TOOLCHECK = REPO / "examples" / "toolcheck"
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]


@pytest.fixture(autouse=True)
def profiles() -> None:
    seed_profiles()


def test_operator_messages_mention_the_live_agents(homeserver, platform_server, realm_id, tmp_path):
    running_realm(TOOLCHECK, realm_id)
    RealmAgent.objects.filter(realm__realm_id=realm_id, agent_id="pong").update(
        state=RealmAgent.State.ELIMINATED
    )
    send_operator_message(realm_id, "  please hurry  ")
    wait_for(
        lambda: Message.objects.filter(realm_id=realm_id, body__startswith="[operator]").exists(),
        "the operator message",
    )
    body = Message.objects.get(realm_id=realm_id, body__startswith="[operator]").body
    assert body == "[operator] @ping @umpire please hurry"
    with pytest.raises(MessageError, match="not a live agent"):
        send_operator_message(realm_id, "hi", to="pong")
    with pytest.raises(MessageError, match="empty"):
        send_operator_message(realm_id, "   ")
    Realm.objects.filter(realm_id=realm_id).update(state=Realm.State.ARCHIVED)
    with pytest.raises(MessageError, match="not running"):
        send_operator_message(realm_id, "hello?")
